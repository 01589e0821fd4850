#include "engine/model/gguf_header.h"

#include <bit>
#include <cstring>
#include <type_traits>

namespace sparrow {
namespace {

template <typename T>
void AppendLe(std::vector<uint8_t>& out, T v) {
  static_assert(std::endian::native == std::endian::little);
  uint8_t le[sizeof(T)];
  std::memcpy(le, &v, sizeof(T));
  out.insert(out.end(), le, le + sizeof(T));
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
void AppendScalar(std::vector<uint8_t>& out, T v) {
  if constexpr (std::is_same_v<T, bool>) {
    out.push_back(v ? 1 : 0);
  } else {
    AppendLe(out, v);
  }
}

template <typename T>
std::vector<uint8_t> EncodeScalar(T v) {
  std::vector<uint8_t> out;
  AppendScalar(out, v);
  return out;
}

// A parsed scalar is stored widened; this writes it back in its own width.
Status AppendWidenedScalar(std::vector<uint8_t>& out, const GgufValue& v, std::string_view key) {
  size_t size = GgufScalarSize(v.type);
  uint8_t b[8] = {};
  if (v.type == GgufValueType::kF32) {
    const float f = static_cast<float>(std::get<double>(v.v));
    std::memcpy(b, &f, 4);
  } else if (v.type == GgufValueType::kF64) {
    const double d = std::get<double>(v.v);
    std::memcpy(b, &d, 8);
  } else if (v.type == GgufValueType::kBool) {
    b[0] = std::get<bool>(v.v) ? 1 : 0;
  } else if (auto* u = std::get_if<uint64_t>(&v.v)) {
    std::memcpy(b, u, 8);  // little-endian: the low bytes come first
  } else if (auto* i = std::get_if<int64_t>(&v.v)) {
    std::memcpy(b, i, 8);
  } else {
    size = 0;  // a string or array under a scalar type id
  }
  if (size == 0) {
    return Unsupported("metadata key '" + std::string(key) + "' has a value that cannot be copied");
  }
  out.insert(out.end(), b, b + size);
  return Status::Ok();
}

}  // namespace

uint64_t GgufTensorBytes(TensorType type, std::span<const uint64_t> dims) {
  const auto traits = GetTensorTypeTraits(type);
  if (!traits || dims.empty() || dims[0] % traits->block_elems != 0) return 0;
  uint64_t rows = 1;
  for (size_t i = 1; i < dims.size(); ++i) rows *= dims[i];
  return rows * (dims[0] / traits->block_elems) * traits->block_bytes;
}

void GgufHeader::AppendU32(std::vector<uint8_t>& out, uint32_t v) {
  AppendLe(out, v);
}
void GgufHeader::AppendU64(std::vector<uint8_t>& out, uint64_t v) {
  AppendLe(out, v);
}
void GgufHeader::AppendString(std::vector<uint8_t>& out, std::string_view s) {
  AppendLe<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

void GgufHeader::set_magic(std::string_view four_bytes) {
  magic_ = std::string(four_bytes.substr(0, 4));
  magic_.resize(4, '\0');
}

GgufHeader& GgufHeader::SetAlignment(uint32_t alignment) {
  alignment_ = alignment == 0 ? 1 : alignment;
  return AddU32("general.alignment", alignment);
}

GgufHeader& GgufHeader::AddEncoded(std::string key, GgufValueType type,
                                   std::vector<uint8_t> value) {
  return AddRaw(std::move(key), static_cast<uint32_t>(type), std::move(value));
}

GgufHeader& GgufHeader::AddRaw(std::string key, uint32_t type_id, std::vector<uint8_t> value) {
  kvs_.push_back({std::move(key), type_id, std::move(value)});
  return *this;
}

// clang-format off
GgufHeader& GgufHeader::AddU8(std::string k, uint8_t v) { return AddEncoded(std::move(k), GgufValueType::kU8, EncodeScalar(v)); }
GgufHeader& GgufHeader::AddI8(std::string k, int8_t v) { return AddEncoded(std::move(k), GgufValueType::kI8, EncodeScalar(v)); }
GgufHeader& GgufHeader::AddU16(std::string k, uint16_t v) { return AddEncoded(std::move(k), GgufValueType::kU16, EncodeScalar(v)); }
GgufHeader& GgufHeader::AddI16(std::string k, int16_t v) { return AddEncoded(std::move(k), GgufValueType::kI16, EncodeScalar(v)); }
GgufHeader& GgufHeader::AddU32(std::string k, uint32_t v) { return AddEncoded(std::move(k), GgufValueType::kU32, EncodeScalar(v)); }
GgufHeader& GgufHeader::AddI32(std::string k, int32_t v) { return AddEncoded(std::move(k), GgufValueType::kI32, EncodeScalar(v)); }
GgufHeader& GgufHeader::AddU64(std::string k, uint64_t v) { return AddEncoded(std::move(k), GgufValueType::kU64, EncodeScalar(v)); }
GgufHeader& GgufHeader::AddI64(std::string k, int64_t v) { return AddEncoded(std::move(k), GgufValueType::kI64, EncodeScalar(v)); }
GgufHeader& GgufHeader::AddF32(std::string k, float v) { return AddEncoded(std::move(k), GgufValueType::kF32, EncodeScalar(v)); }
GgufHeader& GgufHeader::AddF64(std::string k, double v) { return AddEncoded(std::move(k), GgufValueType::kF64, EncodeScalar(v)); }
GgufHeader& GgufHeader::AddBool(std::string k, bool v) { return AddEncoded(std::move(k), GgufValueType::kBool, EncodeScalar(v)); }
// clang-format on

GgufHeader& GgufHeader::AddString(std::string key, std::string_view v) {
  std::vector<uint8_t> value;
  AppendString(value, v);
  return AddEncoded(std::move(key), GgufValueType::kString, std::move(value));
}

template <typename T>
GgufHeader& GgufHeader::AddArray(std::string key, std::span<const T> values) {
  std::vector<uint8_t> value;
  AppendLe(value, static_cast<uint32_t>(ElemTypeOf<T>()));
  AppendLe<uint64_t>(value, values.size());
  for (const T& v : values) AppendScalar(value, v);
  return AddEncoded(std::move(key), GgufValueType::kArray, std::move(value));
}

template GgufHeader& GgufHeader::AddArray(std::string, std::span<const bool>);
template GgufHeader& GgufHeader::AddArray(std::string, std::span<const uint8_t>);
template GgufHeader& GgufHeader::AddArray(std::string, std::span<const int8_t>);
template GgufHeader& GgufHeader::AddArray(std::string, std::span<const uint16_t>);
template GgufHeader& GgufHeader::AddArray(std::string, std::span<const int16_t>);
template GgufHeader& GgufHeader::AddArray(std::string, std::span<const uint32_t>);
template GgufHeader& GgufHeader::AddArray(std::string, std::span<const int32_t>);
template GgufHeader& GgufHeader::AddArray(std::string, std::span<const uint64_t>);
template GgufHeader& GgufHeader::AddArray(std::string, std::span<const int64_t>);
template GgufHeader& GgufHeader::AddArray(std::string, std::span<const float>);
template GgufHeader& GgufHeader::AddArray(std::string, std::span<const double>);

GgufHeader& GgufHeader::AddStringArray(std::string key, const std::vector<std::string>& values) {
  std::vector<uint8_t> value;
  AppendLe(value, static_cast<uint32_t>(GgufValueType::kString));
  AppendLe<uint64_t>(value, values.size());
  for (const std::string& s : values) AppendString(value, s);
  return AddEncoded(std::move(key), GgufValueType::kArray, std::move(value));
}

Status GgufHeader::AddCopy(std::string_view key, const GgufValue& value) {
  std::vector<uint8_t> enc;
  if (value.type == GgufValueType::kString) {
    AppendString(enc, std::get<std::string_view>(value.v));
  } else if (value.type == GgufValueType::kArray) {
    const GgufArray& a = std::get<GgufArray>(value.v);
    AppendLe(enc, static_cast<uint32_t>(a.elem_type));
    AppendLe<uint64_t>(enc, a.size);
    if (a.elem_type == GgufValueType::kString) {
      for (std::string_view s : a.strings) AppendString(enc, s);
    } else if (size_t elem = GgufScalarSize(a.elem_type); elem > 0) {
      enc.insert(enc.end(), a.data, a.data + a.size * elem);
    } else {
      return Unsupported("metadata key '" + std::string(key) + "' is a nested array");
    }
  } else {
    SPARROW_RETURN_IF_ERROR(AppendWidenedScalar(enc, value, key));
  }
  AddEncoded(std::string(key), value.type, std::move(enc));
  return Status::Ok();
}

GgufHeader& GgufHeader::AddTensorInfo(std::string name, TensorType type, std::vector<uint64_t> dims,
                                      uint64_t bytes) {
  tensors_.push_back({std::move(name), static_cast<uint32_t>(type), std::move(dims), bytes});
  return *this;
}

bool GgufHeader::RemoveKey(std::string_view key) {
  const size_t before = kvs_.size();
  std::erase_if(kvs_, [&](const Kv& kv) { return kv.key == key; });
  return kvs_.size() != before;
}

bool GgufHeader::RemoveTensor(std::string_view name) {
  const size_t before = tensors_.size();
  std::erase_if(tensors_, [&](const Tensor& t) { return t.name == name; });
  return tensors_.size() != before;
}

uint64_t GgufHeader::tensor_offset(size_t i) const {
  uint64_t offset = 0;
  for (size_t k = 0; k < i; ++k) offset += AlignUp(tensors_.at(k).bytes);
  return offset;
}

std::vector<uint8_t> GgufHeader::Encode(GgufLayout* layout) const {
  std::vector<uint8_t> out;
  size_t estimate = 24 + alignment_;
  for (const Kv& kv : kvs_) estimate += 12 + kv.key.size() + kv.value.size();
  for (const Tensor& t : tensors_) estimate += 24 + t.name.size() + 8 * t.dims.size();
  out.reserve(estimate);
  // Sized first: GCC 12 misreports an insert into an empty vector as an overflow.
  out.resize(4);
  std::memcpy(out.data(), magic_.data(), 4);
  AppendLe(out, version_);
  AppendLe<uint64_t>(out, tensors_.size());
  AppendLe<uint64_t>(out, kvs_.size());

  GgufLayout local;
  GgufLayout& lay = layout ? *layout : local;
  lay = GgufLayout{};
  for (const Kv& kv : kvs_) {
    GgufLayout::Kv pos;
    pos.key_len = out.size();
    AppendString(out, kv.key);
    pos.type = out.size();
    AppendLe(out, kv.type);
    pos.value = out.size();
    out.insert(out.end(), kv.value.begin(), kv.value.end());
    pos.end = out.size();
    lay.kvs.push_back(pos);
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
    pos.data_size = t.bytes;
    lay.tensors.push_back(pos);
    data_offset += AlignUp(t.bytes);
  }
  lay.header_end = out.size();
  out.resize(AlignUp(out.size()), 0);
  lay.data_start = out.size();
  return out;
}

}  // namespace sparrow
