#pragma once
// ReasoningSplitter: separates a reasoning model's thinking (Qwen 3, DeepSeek R1, QwQ:
// "<think>...</think>" at the start of its output) from its answer, as the output arrives, the
// way llama-server's reasoning_format "deepseek" and the DeepSeek API do. Text that may be
// the start of a marker is held back; the whitespace around the thinking is dropped. A model
// whose prompt already opened <think> starts inside it. Not thread-safe: one per stream.
#include <string>
#include <string_view>

namespace sparrow::server {

// How reasoning reaches clients: kNone keeps it inline in the content (llama-server's "none"),
// kDeepSeek moves it to reasoning_content ("deepseek"; "auto" means the same).
enum class ReasoningFormat { kNone, kDeepSeek };
bool ReasoningFormatFromName(std::string_view name, ReasoningFormat* out);
const char* ReasoningFormatName(ReasoningFormat f);

struct ReasoningParts {
  std::string reasoning;
  std::string content;
};

class ReasoningSplitter {
 public:
  explicit ReasoningSplitter(bool starts_in_thinking);

  ReasoningParts Push(std::string_view text);
  // The output ended: what is held goes out (unfinished thinking stays reasoning).
  ReasoningParts Finish();

 private:
  enum class State { kStart, kThinking, kAnswer };
  State state_;
  std::string buf_;
  bool trim_ = true;  // drop whitespace before the next text of this part
};

// The whole output at once.
ReasoningParts SplitReasoning(std::string_view text, bool starts_in_thinking);

}  // namespace sparrow::server
