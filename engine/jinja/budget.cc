#include "engine/jinja/budget.h"

#include <string>

namespace sparrow::jinja {
namespace {

thread_local RenderBudget* current_budget = nullptr;

}  // namespace

RenderBudget* RenderBudget::Current() {
  return current_budget;
}

void RenderBudget::Charge(size_t n) {
  live_ += n;
  built_ += n;
  if (live_ > peak_) peak_ = live_;
}

BudgetScope::BudgetScope(RenderBudget* budget) : saved_(current_budget) {
  current_budget = budget;
}

BudgetScope::~BudgetScope() {
  current_budget = saved_;
}

bool RoomFor(size_t bytes) {
  RenderBudget* b = current_budget;
  if (b == nullptr || b->Fits(bytes)) return true;
  b->MarkOverflow();
  return false;
}

Status BytesExhausted(const RenderBudget& budget) {
  if (budget.string_too_long()) {
    return ResourceExhausted("the template built a value or output over " +
                             std::to_string(budget.max_string()) + " bytes (the output limit)");
  }
  return ResourceExhausted("the template would hold more than " +
                           std::to_string(budget.max_bytes()) +
                           " bytes of strings, lists and output at once (the byte limit)");
}

Status BytesExhausted() {
  if (current_budget != nullptr) return BytesExhausted(*current_budget);
  return ResourceExhausted("the template exceeded its byte limit");
}

bool RoomForString(size_t size) {
  RenderBudget* b = current_budget;
  if (b != nullptr && size > b->max_string()) {
    b->MarkOverflow(/*string_too_long=*/true);
    return false;
  }
  return RoomFor(size);
}

void NoteScanned(size_t bytes) {
  if (RenderBudget* b = current_budget) b->Scanned(bytes);
}

}  // namespace sparrow::jinja
