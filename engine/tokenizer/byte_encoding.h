#pragma once
// The GPT-2 byte-level alphabet: every byte maps to one printable code point so that byte-level
// BPE vocabularies can be stored as text. Printable Latin-1 bytes map to themselves, the other 68
// bytes to U+0100.. in byte order. Tables are built once; thread-safe.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sparrow::tokenizer {

// UTF-8 text of the code point standing for `byte`.
const std::string& ByteToUnicodeUtf8(uint8_t byte);
// The byte a code point stands for, or nothing when it is not in the alphabet.
std::optional<uint8_t> UnicodeToByte(uint32_t cpt);
// Appends the byte-level encoding of every byte of `text` to `out`.
void AppendByteEncoded(std::string_view text, std::string* out);

}  // namespace sparrow::tokenizer
