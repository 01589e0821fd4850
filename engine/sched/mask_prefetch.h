#pragma once
// MaskPrefetch: computes the next token masks of a step's constrained sequences on a helper
// thread while the forward pass computes their logits, so that ChooseToken finds each mask in
// its constraint's cache instead of walking the vocabulary after the step lands. A sequence's
// grammar state is known when its step is submitted (its last token was accepted), which is
// what makes the overlap possible. The thread starts on the first constrained step.
// Used by the engine loop's thread only: Start, then Wait before any constraint of the step is
// touched again. The jobs hold their constraints, so a sequence that ends meanwhile is safe.
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/runtime/output_constraint.h"
#include "engine/sched/step_plan.h"

namespace sparrow {

class MaskPrefetch {
 public:
  MaskPrefetch() = default;
  MaskPrefetch(const MaskPrefetch&) = delete;
  MaskPrefetch& operator=(const MaskPrefetch&) = delete;
  ~MaskPrefetch();

  // Prepares the masks of every constrained sequence that samples from `plan`'s logits (after
  // the previous Start's work is done).
  void Start(const StepPlan& plan);
  // Returns once the work handed to Start is done.
  void Wait();

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<OutputConstraint>> jobs_;  // guarded by mu_
  bool busy_ = false;                                    // guarded by mu_
  bool stop_ = false;                                    // guarded by mu_
  std::thread thread_;
};

}  // namespace sparrow
