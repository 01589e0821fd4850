#pragma once
// IncrementalDetokenizer: turns generated token ids, fed one at a time, into text that is
// always valid UTF-8, never splitting a character across two outputs. Bytes of a character not
// yet complete are held back; a byte that can no longer be part of a character becomes one
// U+FFFD as soon as that is known (each byte on its own, which is how the llama.cpp reference
// texts show invalid output); what is still held at Flush() becomes U+FFFD too. So the
// concatenated output equals a one-shot decode of all the bytes.
// Not thread-safe: one per stream. The Tokenizer must outlive it.
#include <string>
#include <string_view>

#include "engine/tokenizer/tokenizer.h"

namespace sparrow {

class IncrementalDetokenizer {
 public:
  // `special`: render control tokens as their text (llama_token_to_piece special=true).
  explicit IncrementalDetokenizer(const Tokenizer& tokenizer, bool special = false)
      : tokenizer_(tokenizer), special_(special) {}

  // Appends the piece of `id`; returns the text completed by it (often "", e.g. mid-emoji).
  std::string Push(TokenId id);
  // Same, for raw bytes.
  std::string PushBytes(std::string_view bytes);
  // Returns the held-back bytes as U+FFFD and starts over.
  std::string Flush();
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer& tokenizer_;
  bool special_;
  std::string pending_;
};

// Appends to `out` the valid UTF-8 decoded from the front of `bytes`, with one U+FFFD for each
// byte that does not belong to a complete well-formed character. Stops before a trailing incomplete
// character unless `at_end`. Returns the number of bytes consumed.
size_t AppendSanitizedUtf8(std::string_view bytes, bool at_end, std::string* out);

}  // namespace sparrow
