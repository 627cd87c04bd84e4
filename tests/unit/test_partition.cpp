// Data partitions (train/partition.h): iid is the shards every run had before (bit for bit),
// every scheme puts each training sample in exactly one worker's part, dirichlet's alpha
// moves the label proportions between iid (alpha large) and one class per worker (alpha
// small) and min_partition_size holds or is refused by name, shards gives a worker at most
// 2 S classes, the same seed gives the same partition, and a run's partition/label_counts is
// what its workers draw. Refusals on data without class labels name $.base.partition.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <set>

#include "app/plan/run_plan.h"
#include "tests/labelled_idx.h"
#include "tests/unit/run_spec.h"
#include "train/partition.h"

using namespace wb;

namespace {

// N labels over C classes of uneven size (class c with weight c + 1), in random order.
std::vector<int32_t> uneven_labels(size_t N, int C, uint64_t seed) {
  core::Rng r(seed);
  std::vector<int32_t> l(N);
  const uint64_t total = static_cast<uint64_t>(C) * static_cast<uint64_t>(C + 1) / 2;
  for (auto& x : l) {
    const uint64_t u = r.below(total);
    int c = 0;
    for (uint64_t next = 1; u >= next; next += static_cast<uint64_t>(c) + 1) ++c;
    x = c;
  }
  return l;
}

train::DataPartition part_of(const std::string& spec, std::span<const int32_t> labels, int C, int W,
                             uint64_t seed) {
  train::PartitionInput in;
  in.samples = labels.size();
  in.labels = labels;
  in.classes = C;
  in.workers = W;
  in.seed = seed;
  return train::make_partition(
      train::partition_registry().resolve(json::parse(spec), core::Where{}), in);
}

// Worker k's label shares (count / part size), W x C.
std::vector<double> shares(const train::DataPartition& p, std::span<const int32_t> labels, int C) {
  const auto counts = p.label_counts(labels, C);
  std::vector<double> s(counts.size());
  for (int k = 0; k < p.workers(); ++k)
    for (int c = 0; c < C; ++c)
      s[static_cast<size_t>(k * C + c)] =
          static_cast<double>(counts[static_cast<size_t>(k * C + c)]) / static_cast<double>(p.shard(k).size());
  return s;
}

// The mean over classes of the largest share of the class that one worker holds.
double mean_max_class_share(const train::DataPartition& p, std::span<const int32_t> labels, int C) {
  const auto counts = p.label_counts(labels, C);
  double sum = 0;
  for (int c = 0; c < C; ++c) {
    int64_t tot = 0, mx = 0;
    for (int k = 0; k < p.workers(); ++k) {
      tot += counts[static_cast<size_t>(k * C + c)];
      mx = std::max(mx, counts[static_cast<size_t>(k * C + c)]);
    }
    sum += static_cast<double>(mx) / static_cast<double>(tot);
  }
  return sum / C;
}

}  // namespace

TEST_CASE("partition iid: the shards of the global permutation, sub-shards its W x U grid") {
  for (size_t N : {1u, 7u, 1000u, 6007u})
    for (int W : {1, 3, 7}) {
      if (static_cast<size_t>(W) > N) continue;
      const uint64_t seed = 42 + N;
      const auto perm = train::Sampler::global_permutation(N, seed);
      train::PartitionInput in;
      in.samples = N;
      in.workers = W;
      in.seed = seed;
      const auto p = train::make_partition(json{{"name", "iid"}}, in);
      CHECK(p.blocks);
      for (int k = 0; k < W; ++k) {
        train::Sampler a = p.sampler(k), b(perm, W, k, seed);
        const size_t n = 3 * a.shard_size() + 1;
        REQUIRE(a.shard_size() == b.shard_size());
        std::vector<uint32_t> x(n), y(n);
        a.next(static_cast<int>(n), x);
        b.next(static_cast<int>(n), y);
        INFO("N=" << N << " W=" << W << " k=" << k);
        CHECK(x == y);
        for (int U : {2, 3}) {
          if (static_cast<size_t>(W * U) > N) continue;
          for (int u = 0; u < U; ++u) {
            train::Sampler c = p.sampler(k, U, u), d(perm, W * U, k * U + u, seed);
            std::vector<uint32_t> s(n), t(n);
            c.next(static_cast<int>(n), s);
            d.next(static_cast<int>(n), t);
            CHECK(s == t);
          }
        }
      }
    }
  // A spec without `partition` runs iid.
  auto e = app::parse_experiment(R"({"name": "t", "base": {"steps": 1}})", "t.json");
  CHECK(e.runs[0].cfg.partition.value() == json{{"name", "iid"}});
  CHECK(e.runs[0].resolved()["partition"] == json{{"name", "iid"}});
}

TEST_CASE("partition: every training sample is in exactly one worker's part") {
  const int C = 10;
  const auto labels = uneven_labels(5003, C, 3);
  for (const char* spec :
       {R"({"name": "iid"})", R"({"name": "contiguous"})",
        R"({"name": "dirichlet", "alpha": 0.1, "min_partition_size": 0})",
        R"({"name": "dirichlet", "alpha": 1})", R"({"name": "dirichlet", "alpha": 100})",
        R"({"name": "dirichlet", "alpha": 0.3, "self_balancing": true})",
        R"({"name": "shards", "shards_per_worker": 1})", R"({"name": "shards", "shards_per_worker": 3})"})
    for (int W : {1, 4, 13}) {
      INFO(spec << " W=" << W);
      const auto p = part_of(spec, labels, C, W, 9);
      REQUIRE(p.workers() == W);
      REQUIRE(p.offset.front() == 0);
      REQUIRE(p.offset.back() == labels.size());
      for (int k = 0; k < W; ++k) CHECK(p.shard(k).size() >= 1);
      std::vector<uint32_t> all(p.order);
      std::sort(all.begin(), all.end());
      std::vector<uint32_t> want(labels.size());
      std::iota(want.begin(), want.end(), 0u);
      CHECK(all == want);
      // The matrix's column sums are the class sizes.
      const auto counts = p.label_counts(labels, C);
      for (int c = 0; c < C; ++c) {
        int64_t col = 0;
        for (int k = 0; k < W; ++k) col += counts[static_cast<size_t>(k * C + c)];
        CHECK(col == std::count(labels.begin(), labels.end(), c));
      }
    }
}

TEST_CASE("partition contiguous: worker k holds block k of the data in order") {
  train::PartitionInput in;
  in.samples = 103;
  in.workers = 4;
  const auto p = train::make_partition(json{{"name", "contiguous"}}, in);
  for (int k = 0; k < 4; ++k) {
    const auto s = p.shard(k);
    CHECK(s.front() == 103 * k / 4);
    CHECK(s.back() == 103 * (k + 1) / 4 - 1);
    for (size_t i = 1; i < s.size(); ++i) CHECK(s[i] == s[i - 1] + 1);
  }
}

TEST_CASE("partition dirichlet: alpha large gives iid label proportions, alpha small concentrates") {
  const int C = 10, W = 4;
  const auto labels = uneven_labels(20000, C, 5);
  std::vector<double> global(C, 0.0);
  for (int32_t l : labels) global[static_cast<size_t>(l)] += 1.0 / static_cast<double>(labels.size());
  // alpha 1000: every worker's share of every class within 0.03 of the global share (the
  // per-class proportions are 1/4 +- 0.007); one class concentrated on one worker would
  // break it.
  const auto big = part_of(R"({"name": "dirichlet", "alpha": 1000})", labels, C, W, 1);
  const auto sb = shares(big, labels, C);
  double worst = 0;
  for (int k = 0; k < W; ++k)
    for (int c = 0; c < C; ++c)
      worst = std::max(worst, std::fabs(sb[static_cast<size_t>(k * C + c)] - global[static_cast<size_t>(c)]));
  CHECK(worst < 0.03);
  // The largest share of a class one worker holds: 1/W + noise for iid and alpha 1000, most
  // of the class for alpha 0.05 (E = 0.95 for Dir(0.05) over 4 workers). The iid partition
  // fails the concentrated bound, the alpha 0.05 one fails the spread one.
  const auto iid = part_of(R"({"name": "iid"})", labels, C, W, 1);
  CHECK(mean_max_class_share(big, labels, C) < 0.3);
  CHECK(mean_max_class_share(iid, labels, C) < 0.3);
  for (uint64_t seed : {1u, 2u, 3u}) {
    const auto small = part_of(R"({"name": "dirichlet", "alpha": 0.05})", labels, C, W, seed);
    INFO("seed " << seed);
    CHECK(mean_max_class_share(small, labels, C) > 0.7);
  }
}

TEST_CASE("partition dirichlet: min_partition_size holds, or the 11th failed draw is refused") {
  const int C = 10;
  const auto labels = uneven_labels(2000, C, 8);
  for (uint64_t seed : {1u, 2u, 3u, 4u}) {
    const auto p = part_of(R"({"name": "dirichlet", "alpha": 1, "min_partition_size": 30})", labels, C, 20, seed);
    CHECK(p.min_size() >= 30);
  }
  // alpha 0.001 gives each class to one worker: at most 10 of 50 workers get any sample.
  CHECK_THROWS_WITH_AS(part_of(R"({"name": "dirichlet", "alpha": 0.001, "min_partition_size": 1})", labels, C, 50, 1),
                       doctest::Contains("in 11 attempts"), UserError);
  // More than the data holds: refused at once.
  CHECK_THROWS_WITH_AS(part_of(R"({"name": "dirichlet", "min_partition_size": 200})", labels, C, 20, 1),
                       doctest::Contains("min_partition_size = 200 with 20 workers asks for 4000 samples"),
                       UserError);
}

TEST_CASE("partition dirichlet: self_balancing stops a worker's growth past N / W") {
  const int C = 10, W = 8;
  const auto labels = uneven_labels(8000, C, 4);
  const int64_t largest_class = [&] {
    int64_t m = 0;
    for (int c = 0; c < C; ++c) m = std::max<int64_t>(m, std::count(labels.begin(), labels.end(), c));
    return m;
  }();
  size_t worst_balanced = 0, worst_free = 0;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    const auto b = part_of(R"({"name": "dirichlet", "alpha": 0.1, "self_balancing": true, "min_partition_size": 1})",
                           labels, C, W, seed);
    const auto f = part_of(R"({"name": "dirichlet", "alpha": 0.1, "min_partition_size": 1})", labels, C, W, seed);
    for (int k = 0; k < W; ++k) {
      worst_balanced = std::max(worst_balanced, b.shard(k).size());
      worst_free = std::max(worst_free, f.shard(k).size());
    }
  }
  // A worker takes a class only while it holds <= N / W = 1000 samples, so it ends with at
  // most 1000 + the largest class; without balancing some worker of 5 draws exceeds that.
  CHECK(static_cast<int64_t>(worst_balanced) <= 1000 + largest_class);
  CHECK(static_cast<int64_t>(worst_free) > 1000 + largest_class);
}

TEST_CASE("partition shards: W x S label-sorted shards, a worker holds at most 2 S classes") {
  const int C = 10;
  // Classes of 600 each, in random order: shards of 300 never straddle a class, so each
  // worker holds exactly its S shards' classes (<= S).
  std::vector<int32_t> even(6000);
  for (size_t i = 0; i < even.size(); ++i) even[i] = static_cast<int32_t>(i % 10);
  core::Rng r(3);
  r.shuffle(std::span<int32_t>(even));
  const auto uneven = uneven_labels(6007, C, 6);
  for (int S : {1, 2, 3}) {
    const auto p = part_of(R"({"name": "shards", "shards_per_worker": )" + std::to_string(S) + "}", even, C, 10, 4);
    const auto q = part_of(R"({"name": "shards", "shards_per_worker": )" + std::to_string(S) + "}", uneven, C, 10, 4);
    for (int k = 0; k < 10; ++k) {
      std::set<int32_t> cp, cq;
      for (uint32_t i : p.shard(k)) cp.insert(even[i]);
      for (uint32_t i : q.shard(k)) cq.insert(uneven[i]);
      INFO("S=" << S << " k=" << k);
      CHECK(cp.size() <= static_cast<size_t>(S));
      CHECK(p.shard(k).size() == 600);  // S shards of 600 / S
      // Uneven classes (the smallest holds ~110 samples, shards ~200-600): a shard spans
      // at most ceil(shard / smallest class) + 1 classes; the sizes differ by at most S.
      CHECK(q.shard(k).size() >= static_cast<size_t>(S) * (6007 / (10 * S)));
      CHECK(q.shard(k).size() <= static_cast<size_t>(S) * (6007 / (10 * S) + 1));
    }
  }
  // S = 1 on the even classes: 10 workers, 10 classes of 1 shard each: a worker holds one
  // class, and every class is held by one worker (the iid partition holds all 10 on each).
  const auto one = part_of(R"({"name": "shards", "shards_per_worker": 1})", even, C, 10, 11);
  CHECK(mean_max_class_share(one, even, C) == 1.0);
  CHECK(mean_max_class_share(part_of(R"({"name": "iid"})", even, C, 10, 11), even, C) < 0.5);
  CHECK_THROWS_WITH_AS(part_of(R"({"name": "shards", "shards_per_worker": 700})", even, C, 10, 1),
                       doctest::Contains("makes 7000 shards but the training set has 6000"), UserError);
}

TEST_CASE("partition: the same seed gives the same partition, another seed another") {
  const auto labels = uneven_labels(3000, 10, 2);
  for (const char* spec : {R"({"name": "dirichlet", "alpha": 0.5})", R"({"name": "shards"})", R"({"name": "iid"})"}) {
    INFO(spec);
    const auto a = part_of(spec, labels, 10, 6, 17), b = part_of(spec, labels, 10, 6, 17),
               c = part_of(spec, labels, 10, 6, 18);
    CHECK(a.order == b.order);
    CHECK(a.offset == b.offset);
    CHECK(a.label_counts(labels, 10) == b.label_counts(labels, 10));
    CHECK(a.order != c.order);
  }
}

TEST_CASE("partition: Gamma and Dirichlet variates have their means") {
  // E Gamma(a) = a, Var = a: the mean of n draws within 5 standard errors; a wrong boost for
  // a < 1 (U^a instead of U^(1/a)) or a wrong squeeze misses by far more.
  core::Rng r(99);
  for (double a : {0.05, 0.5, 1.0, 3.0}) {
    const int n = 200000;
    double s = 0;
    for (int i = 0; i < n; ++i) s += std::exp(train::log_gamma_variate(r, a));
    INFO("a=" << a);
    CHECK(std::fabs(s / n - a) < 5 * std::sqrt(a / n));
  }
  // Dir(alpha) over k: each component has mean 1/k and variance (1/k)(1 - 1/k)/(k alpha + 1).
  for (double alpha : {0.1, 2.0}) {
    const int k = 4, n = 50000;
    std::vector<double> m(k, 0.0);
    for (int i = 0; i < n; ++i) {
      const auto p = train::dirichlet_draw(r, alpha, k);
      double t = 0;
      for (int j = 0; j < k; ++j) m[static_cast<size_t>(j)] += p[static_cast<size_t>(j)], t += p[static_cast<size_t>(j)];
      REQUIRE(std::fabs(t - 1) < 1e-12);
    }
    const double sd = std::sqrt(0.25 * 0.75 / (k * alpha + 1) / n);
    for (double x : m) CHECK(std::fabs(x / n - 0.25) < 5 * sd);
  }
}

TEST_CASE("partition: dirichlet and shards are refused, naming the key, on data without class labels") {
  for (const char* model : {R"("quadratic")", R"("cubic")", R"("sparse_mlp")"}) {
    for (const char* part : {R"({"name": "dirichlet"})", R"({"name": "shards"})"}) {
      const std::string spec = std::string(R"({"name": "t", "base": {"steps": 1, "workers": 2, "model": )") + model +
                               R"(, "partition": )" + part + "}}";
      auto e = app::parse_experiment(spec, "t.json");
      app::TaskCache cache;
      INFO(spec);
      CHECK_THROWS_WITH_AS(app::plan_single(e.runs[0], cache.get(e.runs[0].cfg.model.value())),
                           doctest::Contains("$.base.partition: partition \""), UserError);
    }
  }
  // iid and contiguous need no labels.
  for (const char* part : {R"("iid")", R"("contiguous")"}) {
    auto r = test::run_spec(std::string(R"("steps": 2, "workers": 2, "model": "quadratic", "partition": )") + part);
    CHECK(r.status == "completed");
    CHECK(test::find(r, "partition/label_counts") == nullptr);
  }
}

TEST_CASE("partition: a run's partition/label_counts is what its workers draw") {
  const std::string dir = test::make_labelled_idx_dir(500, 50);
  REQUIRE(!dir.empty());
  for (const char* part : {R"({"name": "dirichlet", "alpha": 0.3})", R"({"name": "shards", "shards_per_worker": 2})",
                           R"("iid")"}) {
    INFO(part);
    const std::string base = R"("steps": 3, "workers": 3, "batch_size": 4, "model": {"name": "lenet5", "data_dir": ")" +
                             dir + R"("}, "partition": )" + part;
    const app::RunResult r = test::run_spec(base);
    REQUIRE(r.status == "completed");
    const core::Series* lc = test::find(r, "partition/label_counts");
    REQUIRE(lc != nullptr);
    REQUIRE(lc->rows == 3);
    REQUIRE(lc->cols == 10);
    // The workers' samplers (the training loop's: partition.sampler(k)) over one worker-local
    // epoch draw every sample of their part once: their label counts are the matrix.
    auto e = app::parse_experiment(R"({"name": "t", "base": {)" + base + "}}", "t.json");
    app::TaskCache cache;
    const auto& task = cache.get(e.runs[0].cfg.model.value());
    const auto p = app::make_run_partition(e.runs[0].cfg, *task.train, task.train->size());
    const auto labels = task.train->class_labels();
    int64_t total = 0;
    for (int k = 0; k < 3; ++k) {
      train::Sampler s = p.sampler(k);
      std::vector<uint32_t> drawn(s.shard_size());
      s.next(static_cast<int>(drawn.size()), drawn);
      std::vector<double> counts(10, 0.0);
      for (uint32_t i : drawn) counts[static_cast<size_t>(labels[i])] += 1;
      for (int c = 0; c < 10; ++c) CHECK(lc->data[static_cast<size_t>(k * 10 + c)] == counts[static_cast<size_t>(c)]);
      total += static_cast<int64_t>(drawn.size());
    }
    CHECK(total == 500);
  }
  std::filesystem::remove_all(dir);
}
