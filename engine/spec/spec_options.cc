#include "engine/spec/spec_options.h"

#include "engine/spec/spec_state.h"

namespace sparrow {

std::optional<SpecType> SpecTypeFromName(std::string_view name) {
  if (name == "none") return SpecType::kNone;
  if (name == "draft") return SpecType::kDraft;
  if (name == "ngram") return SpecType::kNgram;
  return std::nullopt;
}

const char* SpecTypeName(SpecType type) {
  switch (type) {
    case SpecType::kNone:
      return "none";
    case SpecType::kDraft:
      return "draft";
    case SpecType::kNgram:
      return "ngram";
  }
  return "none";
}

const char* DraftSourceName(DraftSource source) {
  switch (source) {
    case DraftSource::kModel:
      return "draft";
    case DraftSource::kNgram:
      return "ngram";
    case DraftSource::kPrediction:
      return "prediction";
  }
  return "draft";
}

}  // namespace sparrow
