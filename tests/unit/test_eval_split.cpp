// Train accuracy on a fixed training subset and the validation split
// (app/exec/training_loop.cpp, metrics.train_eval_samples / metrics.validation_fraction):
// the recorded numbers equal a direct evaluation of the final model, the held-back tail is
// never trained on (a split run trains exactly like a run on the truncated data set), and
// the defaults leave every existing curve bit-identical.
#include <doctest/doctest.h>
#include <mpi.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "app/exec/runner.h"
#include "app/exec/training_loop.h"
#include "app/plan/sweep_plan.h"
#include "app/experiment/spec.h"

using namespace wb;

namespace {

app::RunResult run_cfg(const std::string& base) {
  auto e = app::parse_experiment(R"({"name": "t", "base": )" + base + "}", "t.json");
  app::TaskCache cache;
  return app::execute_run(e.runs[0], cache.get(e.runs[0].cfg.model.value()), MPI_COMM_SELF, nullptr);
}

const core::Series* find_series(const app::RunResult& r, const std::string& path) {
  for (const auto& s : r.series)
    if (s.path == path) return &s;
  return nullptr;
}

// Direct evaluation of parameters w on samples [lo, hi) of the task's training set.
models::EvalResult direct_eval(const std::string& model, const std::vector<double>& wd, size_t lo,
                               size_t hi) {
  auto e = app::parse_experiment(R"({"name": "t", "base": {"model": )" + model + "}}", "t.json");
  app::TaskCache cache;
  const auto& task = cache.get(e.runs[0].cfg.model.value());
  std::vector<float> w(wd.begin(), wd.end());
  REQUIRE(w.size() == task.model->num_params());
  const int n = static_cast<int>(hi - lo);
  auto ws = task.model->make_workspace(n);
  models::Batch b;
  task.train->reserve(b, n);
  std::vector<uint32_t> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), static_cast<uint32_t>(lo));
  task.train->gather(idx, b);
  return task.model->evaluate(w, b, *ws);
}

const std::string kModel = R"({"name": "sparse_mlp", "hidden": [8],
    "synthetic": {"train_size": 400, "test_size": 100, "features": 60, "labels": 10, "nnz": 6}})";
const std::string kModel300 = R"({"name": "sparse_mlp", "hidden": [8], "train_limit": 300,
    "synthetic": {"train_size": 400, "test_size": 100, "features": 60, "labels": 10, "nnz": 6}})";
const std::string kRun = R"("workers": 2, "batch_size": 16, "lr": 0.5, "steps": 12, "seed": 3,
    "eval_every": 4)";

// Bit-identical, NaN (not evaluated) matching NaN.
bool same(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

}  // namespace

TEST_CASE("train accuracy: equals a direct evaluation of the final model on the subset") {
  const auto r = run_cfg(R"({"model": )" + kModel + ", " + kRun +
                         R"(, "metrics": {"train_eval_samples": 50}})");
  REQUIRE(r.status == "completed");
  const auto* fp = find_series(r, "final_params");
  const auto* ta = find_series(r, "curves/train_accuracy");
  REQUIRE(fp);
  REQUIRE(ta);
  CHECK(ta->rows == r.curves.step.size());
  // NaN exactly where the test set was not evaluated.
  for (size_t i = 0; i < ta->rows; ++i)
    CHECK(std::isnan(ta->data[i]) == std::isnan(r.curves.test_accuracy[i]));
  const auto ev = direct_eval(kModel, fp->data, 0, 50);
  REQUIRE(ev.count == 50);
  const double direct = ev.correct / 50.0;
  CHECK(r.summary["train_eval_samples"].get<int64_t>() == 50);
  CHECK(r.summary["final_train_accuracy"].get<double>() == doctest::Approx(direct).epsilon(1e-12));
  CHECK(ta->data.back() == doctest::Approx(direct).epsilon(1e-12));
  CHECK(r.summary["final_train_eval_loss"].get<double>() ==
        doctest::Approx(ev.loss_sum / 50.0).epsilon(1e-9));
}

TEST_CASE("validation split: the held-back tail is never trained on and is what is evaluated") {
  // 400 samples, fraction 0.25: trains on [0, 300), validates on [300, 400). A run on the
  // data set truncated to 300 samples must train bit-identically (same shards, same batches):
  // any draw from the tail would change its parameters.
  const auto split = run_cfg(R"({"model": )" + kModel + ", " + kRun +
                             R"(, "metrics": {"validation_fraction": 0.25}})");
  const auto trunc = run_cfg(R"({"model": )" + kModel300 + ", " + kRun + "}");
  REQUIRE(split.status == "completed");
  REQUIRE(trunc.status == "completed");
  CHECK(same(split.curves.train_loss, trunc.curves.train_loss));
  CHECK(same(split.curves.test_accuracy, trunc.curves.test_accuracy));
  const auto* fs = find_series(split, "final_params");
  const auto* ft = find_series(trunc, "final_params");
  REQUIRE(fs);
  REQUIRE(ft);
  CHECK(fs->data == ft->data);
  CHECK(split.summary["validation_samples"].get<int64_t>() == 100);
  CHECK(find_series(trunc, "curves/val_accuracy") == nullptr);
  // The validation numbers are those of the final model on samples [300, 400).
  const auto ev = direct_eval(kModel, fs->data, 300, 400);
  CHECK(split.summary["final_val_accuracy"].get<double>() ==
        doctest::Approx(ev.correct / 100.0).epsilon(1e-12));
  CHECK(split.summary["final_val_loss"].get<double>() ==
        doctest::Approx(ev.loss_sum / 100.0).epsilon(1e-9));
  const auto* va = find_series(split, "curves/val_accuracy");
  REQUIRE(va);
  double best = 0;
  for (double x : va->data)
    if (!std::isnan(x)) best = std::max(best, x);
  CHECK(split.summary["best_val_accuracy"].get<double>() == best);
  // An untrained-on sample set that differs from the training subset: fraction 0.5 leaves
  // fewer training samples, so the epochs of the same 12 steps are larger.
  const auto half = run_cfg(R"({"model": )" + kModel + ", " + kRun +
                            R"(, "metrics": {"validation_fraction": 0.5}})");
  CHECK(half.curves.epoch.back() == doctest::Approx(12.0 * 32 / 200));
}

TEST_CASE("defaults: no validation split and train accuracy leave the curves bit-identical") {
  const auto off = run_cfg(R"({"model": )" + kModel + ", " + kRun +
                           R"(, "metrics": {"train_eval_samples": 0}})");
  const auto on = run_cfg(R"({"model": )" + kModel + ", " + kRun + "}");
  CHECK(same(off.curves.train_loss, on.curves.train_loss));
  CHECK(same(off.curves.test_loss, on.curves.test_loss));
  CHECK(same(off.curves.test_accuracy, on.curves.test_accuracy));
  CHECK(find_series(off, "final_params")->data == find_series(on, "final_params")->data);
  CHECK(find_series(off, "curves/train_accuracy") == nullptr);
  CHECK(find_series(on, "curves/train_accuracy") != nullptr);
  CHECK(find_series(on, "curves/val_loss") == nullptr);
  CHECK(!off.summary.contains("final_train_accuracy"));
  CHECK(on.summary.contains("final_train_accuracy"));
}

TEST_CASE("validation_fraction is bounded to [0, 0.5]") {
  CHECK_THROWS(run_cfg(R"({"model": )" + kModel + ", " + kRun +
                       R"(, "metrics": {"validation_fraction": 0.6}})"));
  CHECK_THROWS(run_cfg(R"({"model": )" + kModel + ", " + kRun +
                       R"(, "metrics": {"train_eval_samples": -1}})"));
}
