// Rank groups: how `mpirun -n P` spreads a sweep whose runs have fewer workers than P.
#include <doctest/doctest.h>

#include <set>

#include "app/exec/runner.h"
#include "app/plan/sweep_plan.h"

using wb::app::plan_rank_groups;

TEST_CASE("one group when every run has at least as many workers as ranks") {
  std::vector<int> g;
  auto first = plan_rank_groups({4, 8, 16}, {1, 2, 4}, 4, g);
  CHECK(first == std::vector<int>{0, 4});
  CHECK(g == std::vector<int>{0, 0, 0});
}

TEST_CASE("lenet_sweep on 64 ranks: 8 groups of 8, one run each, every run on <= W ranks") {
  std::vector<int64_t> w = {4, 8, 16, 32, 4, 8, 16, 32};
  std::vector<double> cost;
  for (auto x : w) cost.push_back(static_cast<double>(x));
  std::vector<int> g;
  auto first = plan_rank_groups(w, cost, 64, g);
  REQUIRE(first.size() == 9);
  for (size_t i = 0; i + 1 < first.size(); ++i) CHECK(first[i + 1] - first[i] == 8);
  CHECK(std::set<int>(g.begin(), g.end()).size() == 8);
}

TEST_CASE("groups cover all ranks contiguously for awkward counts, and the plan is deterministic") {
  for (int P : {2, 3, 5, 7, 13, 64}) {
    std::vector<int64_t> w = {1, 3, 2, 5, 1, 8, 2};
    std::vector<double> cost = {3, 9, 2, 5, 1, 8, 2};
    std::vector<int> g1, g2;
    auto f1 = plan_rank_groups(w, cost, P, g1);
    auto f2 = plan_rank_groups(w, cost, P, g2);
    CHECK(f1 == f2);
    CHECK(g1 == g2);
    CHECK(f1.front() == 0);
    CHECK(f1.back() == P);
    for (size_t i = 0; i + 1 < f1.size(); ++i) CHECK(f1[i + 1] > f1[i]);
    const int G = static_cast<int>(f1.size()) - 1;
    CHECK(G <= static_cast<int>(w.size()));
    for (int x : g1) CHECK((x >= 0 && x < G));
    // every group gets work
    CHECK(static_cast<int>(std::set<int>(g1.begin(), g1.end()).size()) == G);
  }
}
