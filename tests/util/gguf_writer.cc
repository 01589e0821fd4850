#include "tests/util/gguf_writer.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "engine/common/check.h"
#include "engine/kernels/quantize.h"

namespace sparrow::testing {
namespace {

template <typename T>
void AppendLe(std::vector<uint8_t>& out, T v) {
  static_assert(std::endian::native == std::endian::little);
  uint8_t le[sizeof(T)];
  std::memcpy(le, &v, sizeof(T));
  out.insert(out.end(), le, le + sizeof(T));
}

void PadTo(std::vector<uint8_t>& out, uint64_t alignment) {
  while (out.size() % alignment != 0) out.push_back(0);
}

template <typename T>
constexpr GgufValueType ElemTypeOf() {
  if constexpr (std::is_same_v<T, bool>)
    return GgufValueType::kBool;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return GgufValueType::kU8;
  else if constexpr (std::is_same_v<T, int8_t>)
    return GgufValueType::kI8;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return GgufValueType::kU16;
  else if constexpr (std::is_same_v<T, int16_t>)
    return GgufValueType::kI16;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return GgufValueType::kU32;
  else if constexpr (std::is_same_v<T, int32_t>)
    return GgufValueType::kI32;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return GgufValueType::kU64;
  else if constexpr (std::is_same_v<T, int64_t>)
    return GgufValueType::kI64;
  else if constexpr (std::is_same_v<T, float>)
    return GgufValueType::kF32;
  else if constexpr (std::is_same_v<T, double>)
    return GgufValueType::kF64;
  else
    static_assert(sizeof(T) == 0, "not a GGUF array element type");
}

template <typename T>
std::vector<uint8_t> EncodeScalar(T v) {
  std::vector<uint8_t> out;
  if constexpr (std::is_same_v<T, bool>) {
    out.push_back(v ? 1 : 0);
  } else {
    AppendLe(out, v);
  }
  return out;
}

}  // namespace

uint16_t FloatToHalf(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t mag = x & 0x7fffffff;
  if (mag >= 0x7f800000) return sign | 0x7c00 | (mag > 0x7f800000 ? 0x200 : 0);  // inf, NaN
  if (mag >= 0x477ff000) return sign | 0x7c00;  // at or above the halfway point past 65504
  if (mag < 0x38800000) {
    // Subnormal half: count units of 2^-24; scaling by 2^24 is exact, rint rounds to even.
    const float units = std::nearbyint(std::bit_cast<float>(mag) * 16777216.0f);
    return sign | static_cast<uint16_t>(units);
  }
  uint32_t h = (((mag >> 23) - 112) << 10) | ((mag & 0x7fffff) >> 13);
  const uint32_t rest = mag & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // a carry into the exponent is right
  return sign | static_cast<uint16_t>(h);
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t man = h & 0x3ff;
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(man), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000 | (man << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t FloatToBf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN
  return static_cast<uint16_t>((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

void ConvertRowBuiltin(TensorType type, const float* src, void* dst, int64_t n) {
  switch (type) {
    case TensorType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case TensorType::kF16:
    case TensorType::kBF16: {
      auto* out = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) {
        out[i] = type == TensorType::kF16 ? FloatToHalf(src[i]) : FloatToBf16(src[i]);
      }
      return;
    }
    default:
      // Block types go through the engine's quantizers; the plain types above stay
      // independent of the engine so that tests of its F16/BF16 paths are not circular.
      if (!kernels::CanQuantize(type)) {
        std::fprintf(stderr, "ConvertRowBuiltin: no quantizer for %s; pass a QuantizeRowFn\n",
                     std::string(TensorTypeName(type)).c_str());
        std::abort();
      }
      kernels::QuantizeRow(type, src, dst, n);
  }
}

uint64_t RowBytes(TensorType type, uint64_t row_len) {
  const auto traits = GetTensorTypeTraits(type);
  if (!traits || row_len % traits->block_elems != 0) return 0;
  return row_len / traits->block_elems * traits->block_bytes;
}

std::vector<uint8_t> GgufImage::Prefix(size_t n) const {
  SPARROW_CHECK(n <= bytes.size());
  return std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(n));
}

Status GgufImage::WriteFile(const std::string& path) const {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return IoError("cannot create " + path);
  const bool ok = bytes.empty() || std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  if (std::fclose(f) != 0 || !ok) return IoError("cannot write " + path);
  return Status::Ok();
}

void GgufImage::PatchU32(size_t pos, uint32_t v) {
  SPARROW_CHECK(pos + 4 <= bytes.size());
  std::memcpy(bytes.data() + pos, &v, 4);
}

void GgufImage::PatchU64(size_t pos, uint64_t v) {
  SPARROW_CHECK(pos + 8 <= bytes.size());
  std::memcpy(bytes.data() + pos, &v, 8);
}

void GgufImage::SetMagic(std::string_view four_bytes) {
  SPARROW_CHECK(four_bytes.size() == 4 && bytes.size() >= 4);
  std::memcpy(bytes.data(), four_bytes.data(), 4);
}

void GgufWriter::AppendU32(std::vector<uint8_t>& out, uint32_t v) {
  AppendLe(out, v);
}
void GgufWriter::AppendU64(std::vector<uint8_t>& out, uint64_t v) {
  AppendLe(out, v);
}
void GgufWriter::AppendString(std::vector<uint8_t>& out, std::string_view s) {
  AppendLe<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

GgufWriter& GgufWriter::AddEncoded(std::string key, GgufValueType type,
                                   std::vector<uint8_t> value) {
  return AddRaw(std::move(key), static_cast<uint32_t>(type), std::move(value));
}

GgufWriter& GgufWriter::AddRaw(std::string key, uint32_t type_id, std::vector<uint8_t> value) {
  kvs_.push_back({std::move(key), type_id, std::move(value)});
  return *this;
}

GgufWriter& GgufWriter::SetAlignment(uint32_t alignment) {
  alignment_ = alignment == 0 ? 1 : alignment;
  return AddU32("general.alignment", alignment);
}

// clang-format off
GgufWriter& GgufWriter::AddU8(std::string k, uint8_t v) { return AddEncoded(std::move(k), GgufValueType::kU8, EncodeScalar(v)); }
GgufWriter& GgufWriter::AddI8(std::string k, int8_t v) { return AddEncoded(std::move(k), GgufValueType::kI8, EncodeScalar(v)); }
GgufWriter& GgufWriter::AddU16(std::string k, uint16_t v) { return AddEncoded(std::move(k), GgufValueType::kU16, EncodeScalar(v)); }
GgufWriter& GgufWriter::AddI16(std::string k, int16_t v) { return AddEncoded(std::move(k), GgufValueType::kI16, EncodeScalar(v)); }
GgufWriter& GgufWriter::AddU32(std::string k, uint32_t v) { return AddEncoded(std::move(k), GgufValueType::kU32, EncodeScalar(v)); }
GgufWriter& GgufWriter::AddI32(std::string k, int32_t v) { return AddEncoded(std::move(k), GgufValueType::kI32, EncodeScalar(v)); }
GgufWriter& GgufWriter::AddU64(std::string k, uint64_t v) { return AddEncoded(std::move(k), GgufValueType::kU64, EncodeScalar(v)); }
GgufWriter& GgufWriter::AddI64(std::string k, int64_t v) { return AddEncoded(std::move(k), GgufValueType::kI64, EncodeScalar(v)); }
GgufWriter& GgufWriter::AddF32(std::string k, float v) { return AddEncoded(std::move(k), GgufValueType::kF32, EncodeScalar(v)); }
GgufWriter& GgufWriter::AddF64(std::string k, double v) { return AddEncoded(std::move(k), GgufValueType::kF64, EncodeScalar(v)); }
GgufWriter& GgufWriter::AddBool(std::string k, bool v) { return AddEncoded(std::move(k), GgufValueType::kBool, EncodeScalar(v)); }
// clang-format on

GgufWriter& GgufWriter::AddString(std::string key, std::string_view v) {
  std::vector<uint8_t> value;
  AppendString(value, v);
  return AddEncoded(std::move(key), GgufValueType::kString, std::move(value));
}

template <typename T>
GgufWriter& GgufWriter::AddArray(std::string key, std::span<const T> values) {
  std::vector<uint8_t> value;
  AppendLe(value, static_cast<uint32_t>(ElemTypeOf<T>()));
  AppendLe<uint64_t>(value, values.size());
  for (const T& v : values) {
    const std::vector<uint8_t> e = EncodeScalar(v);
    value.insert(value.end(), e.begin(), e.end());
  }
  return AddEncoded(std::move(key), GgufValueType::kArray, std::move(value));
}

template GgufWriter& GgufWriter::AddArray(std::string, std::span<const bool>);
template GgufWriter& GgufWriter::AddArray(std::string, std::span<const uint8_t>);
template GgufWriter& GgufWriter::AddArray(std::string, std::span<const int8_t>);
template GgufWriter& GgufWriter::AddArray(std::string, std::span<const uint16_t>);
template GgufWriter& GgufWriter::AddArray(std::string, std::span<const int16_t>);
template GgufWriter& GgufWriter::AddArray(std::string, std::span<const uint32_t>);
template GgufWriter& GgufWriter::AddArray(std::string, std::span<const int32_t>);
template GgufWriter& GgufWriter::AddArray(std::string, std::span<const uint64_t>);
template GgufWriter& GgufWriter::AddArray(std::string, std::span<const int64_t>);
template GgufWriter& GgufWriter::AddArray(std::string, std::span<const float>);
template GgufWriter& GgufWriter::AddArray(std::string, std::span<const double>);

GgufWriter& GgufWriter::AddStringArray(std::string key, const std::vector<std::string>& values) {
  std::vector<uint8_t> value;
  AppendLe(value, static_cast<uint32_t>(GgufValueType::kString));
  AppendLe<uint64_t>(value, values.size());
  for (const std::string& s : values) AppendString(value, s);
  return AddEncoded(std::move(key), GgufValueType::kArray, std::move(value));
}

GgufWriter& GgufWriter::AddTensor(std::string name, TensorType type, std::vector<uint64_t> dims,
                                  std::vector<uint8_t> data) {
  tensors_.push_back(
      {std::move(name), static_cast<uint32_t>(type), std::move(dims), std::move(data)});
  return *this;
}

GgufWriter& GgufWriter::AddTensorF32(std::string name, TensorType type, std::vector<uint64_t> dims,
                                     std::span<const float> values, const QuantizeRowFn& quantize) {
  SPARROW_CHECK(!dims.empty() && dims[0] > 0);
  const uint64_t row_len = dims[0];
  SPARROW_CHECK(values.size() % row_len == 0);
  const uint64_t row_bytes = RowBytes(type, row_len);
  if (row_bytes == 0) {
    std::fprintf(stderr, "AddTensorF32(%s): row length %llu does not fit type %s\n", name.c_str(),
                 static_cast<unsigned long long>(row_len),
                 std::string(TensorTypeName(type)).c_str());
    std::abort();
  }
  const uint64_t rows = values.size() / row_len;
  std::vector<uint8_t> data(rows * row_bytes);
  for (uint64_t r = 0; r < rows; ++r) {
    const float* src = values.data() + r * row_len;
    void* dst = data.data() + r * row_bytes;
    if (quantize) {
      quantize(type, src, dst, static_cast<int64_t>(row_len));
    } else {
      ConvertRowBuiltin(type, src, dst, static_cast<int64_t>(row_len));
    }
  }
  return AddTensor(std::move(name), type, std::move(dims), std::move(data));
}

GgufImage GgufWriter::Build() const {
  GgufImage img;
  std::vector<uint8_t>& out = img.bytes;
  size_t estimate = 24 + alignment_;
  for (const Kv& kv : kvs_) estimate += 12 + kv.key.size() + kv.value.size();
  for (const Tensor& t : tensors_) {
    estimate += 24 + t.name.size() + 8 * t.dims.size() + t.data.size() + alignment_;
  }
  out.reserve(estimate);
  // Sized first: GCC 12 misreports an insert into an empty vector as an overflow.
  out.resize(4);
  std::memcpy(out.data(), magic_.data(), 4);
  AppendLe(out, version_);
  AppendLe<uint64_t>(out, tensors_.size());
  AppendLe<uint64_t>(out, kvs_.size());

  for (const Kv& kv : kvs_) {
    GgufLayout::Kv pos;
    pos.key_len = out.size();
    AppendString(out, kv.key);
    pos.type = out.size();
    AppendLe(out, kv.type);
    pos.value = out.size();
    out.insert(out.end(), kv.value.begin(), kv.value.end());
    pos.end = out.size();
    img.layout.kvs.push_back(pos);
  }

  uint64_t data_offset = 0;
  for (const Tensor& t : tensors_) {
    GgufLayout::Tensor pos;
    pos.name_len = out.size();
    AppendString(out, t.name);
    pos.n_dims = out.size();
    AppendLe(out, static_cast<uint32_t>(t.dims.size()));
    pos.dims = out.size();
    for (uint64_t d : t.dims) AppendLe(out, d);
    pos.type = out.size();
    AppendLe(out, t.type);
    pos.offset = out.size();
    AppendLe(out, data_offset);
    pos.end = out.size();
    pos.data_offset = data_offset;
    pos.data_size = t.data.size();
    img.layout.tensors.push_back(pos);
    data_offset += (t.data.size() + alignment_ - 1) / alignment_ * alignment_;
  }
  img.layout.header_end = out.size();

  PadTo(out, alignment_);
  img.layout.data_start = out.size();
  img.layout.data_end = out.size();
  for (const Tensor& t : tensors_) {
    out.insert(out.end(), t.data.begin(), t.data.end());
    img.layout.data_end = out.size();
    PadTo(out, alignment_);
  }
  // The padding is relative to the file start; data offsets are relative to data_start, and
  // data_start is a multiple of the alignment, so the two agree.
  return img;
}

bool GgufWriter::RemoveKey(std::string_view key) {
  const size_t before = kvs_.size();
  std::erase_if(kvs_, [&](const Kv& kv) { return kv.key == key; });
  return kvs_.size() != before;
}

bool GgufWriter::RemoveTensor(std::string_view name) {
  const size_t before = tensors_.size();
  std::erase_if(tensors_, [&](const Tensor& t) { return t.name == name; });
  return tensors_.size() != before;
}

}  // namespace sparrow::testing
