// The result columns, declared once (DESIGN.md section 9, the contract with notebooks): the
// curve columns of /runs/<id>/curves/ and the summary fields of summary_json and /summary.
// The training loop fills them, the recorder writes them, every results file carries this
// declaration in its root attribute result_schema_json, `workbench list --json` prints it
// ("results"), and psgd_analysis reads it from the file.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "app/results/run_result.h"
#include "core/params.h"

namespace wb::app {

enum class ColumnType { kInt, kFloat, kString };

// When a column or field is present.
enum class Presence {
  kAlways,
  kTest,        // the model has a test set (NaN at points without an evaluation)
  kAccuracy,    // a classification model's test set
  kTrainEval,   // metrics.train_eval_samples > 0, classification models
  kValidation,  // metrics.validation_fraction > 0
  kSequence,    // a sequence model (Model::tokens_per_sample() > 0: gpt)
  kRun,         // /summary only: from the run group's own attributes
};

struct ResultColumn {
  ResultColumn(std::string n, ColumnType t, Presence w, std::string d, bool table = false,
               json e = nullptr)
      : name(std::move(n)), type(t), when(w), doc(std::move(d)), in_table(table), empty(std::move(e)) {}
  std::string name;
  ColumnType type;
  Presence when;
  std::string doc;
  bool in_table = false;  // a column of the /summary compound (summary fields)
  json empty;             // summary_json value before it is measured (null: not measured)
  // Curve columns the training loop records in Curves (the others arrive as the series
  // "curves/<name>" of a RunResult).
  std::vector<double> Curves::*member = nullptr;
};

// /runs/<id>/curves/<name>: 1-D, one row per curve point, in this order.
const std::vector<ResultColumn>& curve_columns();
// summary_json keys (Presence::kRun excepted) and the /summary compound (in_table), in order.
const std::vector<ResultColumn>& summary_fields();
// summary_json of a run before anything is measured: every kAlways field at its `empty`.
json empty_summary();
// {"curves": [{name, type, when, doc}...], "summary": [...]}: the file attribute and the
// "results" object of `workbench list --json`.
json result_schema_json();

}  // namespace wb::app
