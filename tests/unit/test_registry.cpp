// The registry lists every algorithm file: a file in algorithms/ whose registrar was
// dropped by the linker (or forgotten) fails here. CMake passes the file names.
#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "algorithms/algorithm.h"
#include "models/model.h"
#include "train/optimizer.h"
#include "train/schedule.h"

using namespace wb;

TEST_CASE("every algorithms/*.cpp file registers an algorithm of the same name") {
  std::stringstream ss(WB_ALGORITHM_FILES);
  std::string f;
  int n = 0;
  while (std::getline(ss, f, ',')) {
    if (f.empty()) continue;
    ++n;
    INFO("algorithms/" << f << ".cpp");
    CHECK(algo::algorithm_registry().has(f));
  }
  CHECK(n >= 2);
  CHECK(algo::algorithm_registry().list().size() == static_cast<size_t>(n));
}

TEST_CASE("the foundation's names are registered") {
  CHECK(algo::algorithm_registry().has("sync_sgd"));
  CHECK(algo::algorithm_registry().has("adasum"));
  CHECK(models::model_registry().has("quadratic"));
  CHECK(models::model_registry().has("cubic"));
  CHECK(train::optimizer_registry().has("sgd"));
  CHECK(train::schedule_registry().has("constant"));
}

TEST_CASE("unknown names list the known ones") {
  try {
    algo::algorithm_registry().get("adasun", core::Where{"x.json", "$.base.algorithm"});
    FAIL("expected an error");
  } catch (const UserError& e) {
    std::string m = e.what();
    CHECK(m.find("x.json: $.base.algorithm") != std::string::npos);
    CHECK(m.find("adasun") != std::string::npos);
    CHECK(m.find("adasum") != std::string::npos);
    CHECK(m.find("sync_sgd") != std::string::npos);
  }
}

TEST_CASE("resolve fills every parameter with its default") {
  auto j = algo::algorithm_registry().resolve(json("sync_sgd"), core::Where{});
  CHECK(j["name"] == "sync_sgd");
  CHECK(j["combine"] == "average");
  CHECK(j["lr_scaling"] == "none");
  auto k = algo::algorithm_registry().resolve(json::parse(R"({"name":"sync_sgd","combine":"sum"})"),
                                              core::Where{});
  CHECK(k["combine"] == "sum");
}
