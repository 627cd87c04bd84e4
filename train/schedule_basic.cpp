// Basic schedules. `constant`: lr = base lr at every step.
#include "train/schedule.h"

namespace wb::train {
namespace {

class Constant final : public Schedule {
 public:
  Constant(const core::NoParams&) {}
  double lr(double base_lr, const Progress&) const override { return base_lr; }
};

}  // namespace

ScheduleRegistry& schedule_registry() {
  static ScheduleRegistry r("schedule");
  return r;
}

WB_REGISTER_SCHEDULE("constant", Constant, core::NoParams, "lr = base lr at every step");

}  // namespace wb::train
