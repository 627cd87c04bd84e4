#include "app/results/timeline_writer.h"

#include <cstdio>
#include <map>

#include "app/results/results_layout.h"
#include "app/results/run_result.h"
#include "core/error.h"
#include "core/params.h"

namespace wb::app {

struct TimelineWriter::Run final : sim::EventSink {
  std::string id;
  int64_t index = 0;
  double sim_s = 0, compute_s = 0, comm_s = 0, wait_s = 0;
  std::vector<sim::SimEvent> events;
  void event(const sim::SimEvent& e) override { events.push_back(e); }
};

TimelineWriter::TimelineWriter() = default;
TimelineWriter::~TimelineWriter() = default;

sim::EventSink* TimelineWriter::begin_run(const std::string& id, int64_t index) {
  runs_.push_back(std::make_unique<Run>());
  runs_.back()->id = id;
  runs_.back()->index = index;
  return runs_.back().get();
}

void TimelineWriter::end_run(double sim_s, double compute_s, double comm_s, double wait_s) {
  WB_ASSERT(!runs_.empty(), "TimelineWriter::end_run without begin_run");
  Run& r = *runs_.back();
  r.sim_s = sim_s;
  r.compute_s = compute_s;
  r.comm_s = comm_s;
  r.wait_s = wait_s;
}

bool TimelineWriter::empty() const { return runs_.empty(); }

namespace {
// Track -> trace thread id: steps 0, collectives 1, worker k at k + 2.
int tid_of(int track) { return track == sim::kStepTrack ? 0 : track == sim::kCollectiveTrack ? 1 : track + 2; }
std::string track_name(int track) {
  if (track == sim::kStepTrack) return "steps";
  if (track == sim::kCollectiveTrack) return "collectives";
  return "worker " + std::to_string(track);
}
}  // namespace

void TimelineWriter::write(const std::string& path) const {
  json ev = json::array();
  json runs = json::array();
  for (const auto& rp : runs_) {
    const Run& r = *rp;
    ev.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", r.index}, {"args", {{"name", r.id}}}});
    std::map<int, bool> tracks{{sim::kStepTrack, true}, {sim::kCollectiveTrack, true}};
    for (const auto& e : r.events) tracks[e.track] = true;
    for (const auto& [t, _] : tracks) {
      ev.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", r.index}, {"tid", tid_of(t)},
                    {"args", {{"name", track_name(t)}}}});
      ev.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", r.index}, {"tid", tid_of(t)},
                    {"args", {{"sort_index", tid_of(t)}}}});
    }
    for (const auto& e : r.events)
      ev.push_back({{"name", e.name}, {"cat", sim::event_kind_name(e.kind)}, {"ph", "X"},
                    {"ts", e.start_s * 1e6}, {"dur", e.dur_s * 1e6}, {"pid", r.index},
                    {"tid", tid_of(e.track)}});
    runs.push_back({{"id", r.id}, {"pid", r.index}, {"sim_s", r.sim_s}, {"compute_s", r.compute_s},
                    {"comm_s", r.comm_s}, {"wait_s", r.wait_s}, {"events", r.events.size()}});
  }
  json doc = {{"traceEvents", ev},
              {"displayTimeUnit", "ms"},
              {"otherData", {{"clock", "simulated seconds (ts, dur in microseconds)"}, {"runs", runs}}}};
  // The results file's writer (never through a link, fsync'ed, renamed into place).
  const std::string text = doc.dump() + "\n";
  try {
    replace_file(path, std::vector<char>(text.begin(), text.end()), "the timeline");
  } catch (const WriteError& e) {
    throw UserError(e.what());
  }
}

}  // namespace wb::app
