#pragma once
// RenderBudget: the bytes one render holds and the work it has done, so that no template can
// take more memory or time than RenderLimits allow. Values charge the budget of the render
// running on their thread when they are made (a string its capacity, a list or dict its slots,
// each plus kValueOverhead for the cell and its control block) and give the bytes back when the
// last copy goes, so `live` is what the render holds now; the output and capture buffers count
// too. Builders that can make a large value in one operation ask Fits() before they allocate.
// Bytes built and bytes scanned are also counted as work (kBytesPerStep), which bounds the time
// of a template that builds or searches long strings over and over.
#include <cstddef>
#include <cstdint>

#include "engine/common/status.h"

namespace sparrow::jinja {

class RenderBudget {
 public:
  // What a value's cell costs beyond its payload: the shared_ptr control block, the string or
  // vector header, the allocator's bookkeeping (an upper-bound estimate on 64-bit targets).
  static constexpr size_t kValueOverhead = 64;
  // Bytes built or scanned that count as one step of work.
  static constexpr size_t kBytesPerStep = 64;

  RenderBudget(size_t max_bytes, size_t max_string)
      : max_bytes_(max_bytes), max_string_(max_string) {}
  RenderBudget(const RenderBudget&) = delete;
  RenderBudget& operator=(const RenderBudget&) = delete;

  // The budget of the render running on this thread, or null outside a render.
  static RenderBudget* Current();

  // Whether `more` bytes can be built on top of what the render holds.
  bool Fits(size_t more) const { return more <= max_bytes_ && live_ <= max_bytes_ - more; }
  void Charge(size_t n);
  void Release(size_t n) { live_ -= n < live_ ? n : live_; }
  void Scanned(size_t n) { scanned_ += n; }
  // A builder that stopped short because the next piece would not fit: the render fails at
  // its next step, whatever the builder returned.
  void MarkOverflow(bool string_too_long = false) {
    overflow_ = true;
    string_too_long_ |= string_too_long;
  }
  // The overflow was a string over max_string rather than the sum over max_bytes.
  bool string_too_long() const { return string_too_long_; }

  bool exhausted() const { return overflow_ || live_ > max_bytes_; }
  size_t live() const { return live_; }
  size_t peak() const { return peak_; }
  size_t max_bytes() const { return max_bytes_; }
  size_t max_string() const { return max_string_; }
  // Bytes built and scanned so far, in steps of work.
  int64_t byte_steps() const { return static_cast<int64_t>((built_ + scanned_) / kBytesPerStep); }

 private:
  size_t max_bytes_;
  size_t max_string_;
  size_t live_ = 0;
  size_t peak_ = 0;
  size_t built_ = 0;
  size_t scanned_ = 0;
  bool overflow_ = false;
  bool string_too_long_ = false;
};

// Makes `budget` the current one of this thread for its lifetime (renders do not nest, but the
// previous one is restored all the same).
class BudgetScope {
 public:
  explicit BudgetScope(RenderBudget* budget);
  ~BudgetScope();
  BudgetScope(const BudgetScope&) = delete;
  BudgetScope& operator=(const BudgetScope&) = delete;

 private:
  RenderBudget* saved_;
};

// Whether a value of `bytes` can be built now: true outside a render; inside, false marks the
// render's budget overflowed.
bool RoomFor(size_t bytes);
// The same for a string of `size` bytes, which also must not exceed the longest string a render
// may build (RenderLimits::max_output_bytes).
bool RoomForString(size_t size);
// Counts `bytes` read by a string operation as work of the current render (if any).
void NoteScanned(size_t bytes);
// The error of a render that hit the byte limit (or built a string over its max_string) of the
// current budget.
Status BytesExhausted();
Status BytesExhausted(const RenderBudget& budget);

}  // namespace sparrow::jinja
