#include "app/results/result_schema.h"

namespace wb::app {

namespace {
constexpr ColumnType I = ColumnType::kInt, F = ColumnType::kFloat, S = ColumnType::kString;
const char* type_name(ColumnType t) { return t == I ? "int" : t == F ? "float" : "string"; }
const char* presence_name(Presence p) {
  switch (p) {
    case Presence::kAlways: return "always";
    case Presence::kTest: return "test";
    case Presence::kAccuracy: return "accuracy";
    case Presence::kTrainEval: return "train_eval";
    case Presence::kValidation: return "validation";
    case Presence::kSequence: return "sequence";
    case Presence::kRun: return "run";
  }
  return "?";
}
}  // namespace

const std::vector<ResultColumn>& curve_columns() {
  using P = Presence;
  static const std::vector<ResultColumn> c = [] {
    std::vector<ResultColumn> v = {
      {"step", I, P::kAlways, "global steps done (1-based: the point after that step)"},
      {"epoch", F, P::kAlways, "samples processed / training samples"},
      {"samples", I, P::kAlways, "training samples processed by all workers"},
      {"wall_s", F, P::kAlways, "this machine's seconds since the run started"},
      {"sim_s", F, P::kAlways, "simulated seconds (the clock's cost model)"},
      {"lr", F, P::kAlways,
       "the learning rate the step applied: the schedule's value x the algorithm's scale "
       "(sync_sgd, adasum: lr_scaling none 1, linear W, sqrt sqrt(W)); every other "
       "algorithm applies the schedule's value (Adaptive SGD's per-worker "
       "rates: workers/lr)"},
      {"train_loss", F, P::kAlways, "mean over all W workers of their batch losses"},
      {"test_loss", F, P::kTest, "test-set loss of the evaluated model (NaN between evaluations)"},
      {"test_accuracy", F, P::kAccuracy, "test-set accuracy (NaN between evaluations)"},
      {"train_accuracy", F, P::kTrainEval,
       "accuracy on the first metrics.train_eval_samples training samples, at evaluations"},
      {"train_eval_loss", F, P::kTrainEval, "loss on that training subset, at evaluations"},
      {"val_loss", F, P::kValidation, "loss on the held-back validation tail, at evaluations"},
      {"val_accuracy", F, P::kValidation, "accuracy on the validation tail (classification)"},
    };
    // The columns the training loop pushes into Curves, each one's member.
    using M = std::vector<double> Curves::*;
    const std::pair<const char*, M> members[] = {
        {"step", &Curves::step},         {"epoch", &Curves::epoch},
        {"samples", &Curves::samples},   {"wall_s", &Curves::wall_s},
        {"sim_s", &Curves::sim_s},       {"lr", &Curves::lr},
        {"train_loss", &Curves::train_loss}, {"test_loss", &Curves::test_loss},
        {"test_accuracy", &Curves::test_accuracy}};
    for (const auto& [name, m] : members)
      for (auto& col : v)
        if (col.name == name) col.member = m;
    return v;
  }();
  return c;
}

const std::vector<ResultColumn>& summary_fields() {
  using P = Presence;
  const json null;
  static const std::vector<ResultColumn> c = {
      {"id", S, P::kRun, "the run id", true, null},
      {"index", I, P::kRun, "the run's position in the spec", true, null},
      {"status", S, P::kRun, "completed | diverged | interrupted | failed", true, null},
      {"steps", I, P::kAlways, "steps done", true, 0},
      {"samples", I, P::kAlways, "training samples processed", true, 0},
      {"wall_s", F, P::kAlways, "wall-clock seconds", true, null},
      {"sim_s", F, P::kAlways, "simulated seconds", true, null},
      // sim_s = compute + communication + waiting on stragglers (the clock's cost model)
      {"sim_compute_s", F, P::kAlways, "simulated seconds of compute", true, null},
      {"sim_comm_s", F, P::kAlways, "simulated seconds of communication", true, null},
      {"sim_wait_s", F, P::kAlways, "simulated seconds waiting on stragglers", true, null},
      // The low-communication question (DiLoCo, arXiv:2311.08105): what the run sent, and the
      // share of its simulated time that was compute (`workbench bandwidth` re-prices it).
      {"bytes_sent_per_worker", F, P::kAlways,
       "bytes one worker put on the network over the run, mean over workers (2 (W-1)/W n per "
       "allreduce of n bytes; sim/comm_ledger.h); null where the algorithm prices its own "
       "communication (LAP/LPP, Adaptive, elastic SGD)", true, null},
      {"compute_utilization", F, P::kAlways, "sim_compute_s / sim_s (null when sim_s is 0)", true, null},
      // A profile prices one machine: on another CPU, sim_s carries the difference between the
      // two machines as well as the model's error (app/results/host_info.h).
      {"profile_host", S, P::kAlways,
       "where the run's clock profile was measured: same (this CPU), other (another CPU), "
       "unknown (the profile records none); null without a profile", true, null},
      // wall_s includes the evaluations (test, train subset, validation); this says how much
      // (calibrate --validate takes it out of LAP-SGD's whole-run time per step)
      {"eval_wall_s", F, P::kAlways, "wall-clock seconds spent evaluating (part of wall_s)", false, null},
      {"final_train_loss", F, P::kAlways, "train_loss at the last step", true, null},
      {"min_train_loss", F, P::kAlways, "lowest finite train_loss", true, null},
      {"final_test_loss", F, P::kAlways, "test loss at the last evaluation", true, null},
      {"final_test_accuracy", F, P::kAlways, "test accuracy at the last evaluation", true, null},
      {"best_test_accuracy", F, P::kAlways, "highest test accuracy of the run", true, null},
      {"converged_step", I, P::kAlways, "step the convergence rule stopped at; -1 = did not",
       true, -1},
      {"train_eval_samples", I, P::kTrainEval, "training samples of the train subset", false, null},
      {"final_train_accuracy", F, P::kTrainEval, "train-subset accuracy at the last evaluation",
       false, null},
      {"final_train_eval_loss", F, P::kTrainEval, "train-subset loss at the last evaluation",
       false, null},
      {"validation_samples", I, P::kValidation, "samples held back for validation", false, null},
      {"final_val_loss", F, P::kValidation, "validation loss at the last evaluation", false, null},
      {"final_val_accuracy", F, P::kValidation, "validation accuracy at the last evaluation",
       false, null},
      {"best_val_accuracy", F, P::kValidation, "highest validation accuracy", false, null},
      // Language models count their data in tokens (nanoGPT's tokens_per_iter = grad_accum x
      // world size x batch x block): samples x Model::tokens_per_sample (gpt: the block
      // predicted positions of each window). Absent for the other models, whose samples
      // are the unit (`samples`).
      {"tokens", I, P::kSequence,
       "training tokens processed by all workers: samples x the model's predicted tokens per "
       "sample (gpt: block)", false, null},
      {"final_test_bpc", F, P::kSequence,
       "final_test_loss in bits per token (per character for a byte-level model): "
       "final_test_loss / ln 2", false, null},
  };
  return c;
}

json empty_summary() {
  json s = json::object();
  for (const auto& f : summary_fields())
    if (f.when == Presence::kAlways) s[f.name] = f.empty;
  return s;
}

json result_schema_json() {
  auto list = [](const std::vector<ResultColumn>& cols, bool table) {
    json a = json::array();
    for (const auto& c : cols) {
      json o = {{"name", c.name}, {"type", type_name(c.type)}, {"when", presence_name(c.when)},
                {"doc", c.doc}};
      if (table) o["in_table"] = c.in_table;
      a.push_back(o);
    }
    return a;
  };
  return {{"curves", list(curve_columns(), false)}, {"summary", list(summary_fields(), true)}};
}

}  // namespace wb::app
