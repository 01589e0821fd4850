#include "engine/model/gguf_file.h"

#include <algorithm>
#include <cstring>

#include "engine/model/byte_reader.h"

namespace sparrow {
namespace {

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" little-endian
// PowerInfer's sparse variant: the same layout behind another magic.
constexpr uint32_t kPwriMagic = 0x49525750;  // "PWRI" little-endian
constexpr uint32_t kMaxDims = 4;             // GGML_MAX_DIMS
constexpr uint64_t kMaxNameLen = 4096;

bool MulOverflows(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_mul_overflow(a, b, out);
}

bool IsKnownValueType(uint32_t t) {
  return t <= static_cast<uint32_t>(GgufValueType::kF64);
}

std::string Quote(std::string_view s) {
  std::string out = "'";
  for (char c : s.substr(0, 200)) out += (static_cast<unsigned char>(c) < 0x20) ? '?' : c;
  if (s.size() > 200) out += "...";
  return out + "'";
}

template <typename Wire, typename Stored>
Status ReadAs(ByteReader& r, GgufValue* v, std::string_view what) {
  Wire x{};
  SPARROW_RETURN_IF_ERROR(r.Read(&x, what));
  v->v = static_cast<Stored>(x);
  return Status::Ok();
}

// Reads one non-array value of type `t` at the reader's position into `v`.
Status ReadScalar(ByteReader& r, GgufValueType t, GgufValue* v, std::string_view what) {
  v->type = t;
  switch (t) {
    case GgufValueType::kU8:
      return ReadAs<uint8_t, uint64_t>(r, v, what);
    case GgufValueType::kI8:
      return ReadAs<int8_t, int64_t>(r, v, what);
    case GgufValueType::kU16:
      return ReadAs<uint16_t, uint64_t>(r, v, what);
    case GgufValueType::kI16:
      return ReadAs<int16_t, int64_t>(r, v, what);
    case GgufValueType::kU32:
      return ReadAs<uint32_t, uint64_t>(r, v, what);
    case GgufValueType::kI32:
      return ReadAs<int32_t, int64_t>(r, v, what);
    case GgufValueType::kU64:
      return ReadAs<uint64_t, uint64_t>(r, v, what);
    case GgufValueType::kI64:
      return ReadAs<int64_t, int64_t>(r, v, what);
    case GgufValueType::kF32:
      return ReadAs<float, double>(r, v, what);
    case GgufValueType::kF64:
      return ReadAs<double, double>(r, v, what);
    case GgufValueType::kBool: {
      uint8_t x = 0;
      SPARROW_RETURN_IF_ERROR(r.Read(&x, what));
      if (x > 1) return Corrupt(std::string(what) + " is a bool with value " + std::to_string(x));
      v->v = x != 0;
      return Status::Ok();
    }
    case GgufValueType::kString: {
      std::string_view s;
      SPARROW_RETURN_IF_ERROR(r.ReadString(&s, what));
      v->v = s;
      return Status::Ok();
    }
    case GgufValueType::kArray:
      break;
  }
  return Internal("ReadScalar called for an array");
}

Status ReadValue(ByteReader& r, GgufValueType t, GgufValue* v, const std::string& key) {
  const std::string what = "value of key " + Quote(key);
  if (t != GgufValueType::kArray) return ReadScalar(r, t, v, what);

  v->type = t;
  GgufArray a;
  uint32_t elem = 0;
  SPARROW_RETURN_IF_ERROR(r.Read(&elem, what + " (array element type)"));
  if (!IsKnownValueType(elem)) {
    return Corrupt("key " + Quote(key) + " is an array of unknown value type " +
                   std::to_string(elem));
  }
  a.elem_type = static_cast<GgufValueType>(elem);
  if (a.elem_type == GgufValueType::kArray) {
    return Unsupported("key " + Quote(key) +
                       " is an array of arrays, which GGUF readers do not support");
  }
  SPARROW_RETURN_IF_ERROR(r.Read(&a.size, what + " (array length)"));
  if (a.elem_type == GgufValueType::kString) {
    // Each string takes at least its 8-byte length, which bounds the count before reserving.
    if (a.size > r.remaining() / 8) {
      return Corrupt("key " + Quote(key) + " claims " + std::to_string(a.size) +
                     " strings but only " + std::to_string(r.remaining()) + " bytes remain");
    }
    a.strings.resize(a.size);
    for (uint64_t i = 0; i < a.size; ++i) {
      SPARROW_RETURN_IF_ERROR(r.ReadString(&a.strings[i], what + " element " + std::to_string(i)));
    }
  } else {
    uint64_t bytes = 0;
    if (MulOverflows(a.size, GgufScalarSize(a.elem_type), &bytes) || bytes > r.remaining()) {
      return Corrupt("key " + Quote(key) + " claims " + std::to_string(a.size) + " elements of " +
                     std::string(GgufValueTypeName(a.elem_type)) + " but only " +
                     std::to_string(r.remaining()) + " bytes remain");
    }
    a.data = r.here();
    SPARROW_RETURN_IF_ERROR(r.Skip(bytes, what));
    if (a.elem_type == GgufValueType::kBool) {
      for (uint64_t i = 0; i < a.size; ++i) {
        if (a.data[i] > 1)
          return Corrupt("key " + Quote(key) + " holds a bool array with value " +
                         std::to_string(a.data[i]));
      }
    }
  }
  v->v = std::move(a);
  return Status::Ok();
}

template <typename T>
T LoadLE(const uint8_t* p) {
  T x;
  std::memcpy(&x, p, sizeof(T));
  return x;
}

}  // namespace

uint64_t GgufScalarSize(GgufValueType t) {
  switch (t) {
    case GgufValueType::kU8:
    case GgufValueType::kI8:
    case GgufValueType::kBool:
      return 1;
    case GgufValueType::kU16:
    case GgufValueType::kI16:
      return 2;
    case GgufValueType::kU32:
    case GgufValueType::kI32:
    case GgufValueType::kF32:
      return 4;
    case GgufValueType::kU64:
    case GgufValueType::kI64:
    case GgufValueType::kF64:
      return 8;
    default:
      return 0;
  }
}

std::string_view GgufValueTypeName(GgufValueType t) {
  switch (t) {
    case GgufValueType::kU8:
      return "u8";
    case GgufValueType::kI8:
      return "i8";
    case GgufValueType::kU16:
      return "u16";
    case GgufValueType::kI16:
      return "i16";
    case GgufValueType::kU32:
      return "u32";
    case GgufValueType::kI32:
      return "i32";
    case GgufValueType::kF32:
      return "f32";
    case GgufValueType::kBool:
      return "bool";
    case GgufValueType::kString:
      return "string";
    case GgufValueType::kArray:
      return "array";
    case GgufValueType::kU64:
      return "u64";
    case GgufValueType::kI64:
      return "i64";
    case GgufValueType::kF64:
      return "f64";
  }
  return "unknown";
}

bool GgufValue::IsInteger() const {
  switch (type) {
    case GgufValueType::kU8:
    case GgufValueType::kI8:
    case GgufValueType::kU16:
    case GgufValueType::kI16:
    case GgufValueType::kU32:
    case GgufValueType::kI32:
    case GgufValueType::kU64:
    case GgufValueType::kI64:
      return true;
    default:
      return false;
  }
}

GgufFile::~GgufFile() = default;

Result<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path, Env* env) {
  if (!env) env = Env::Default();
  SPARROW_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> m, env->MapReadOnly(path));
  if (m->size() == 0) return Corrupt(path + ": file is empty (0 bytes), not a GGUF model");
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->path_ = path;
  f->base_ = m->data();
  f->size_ = m->size();
  f->mapping_ = std::move(m);
  Status s = f->Parse();
  if (!s.ok()) return s.WithContext(path);
  return f;
}

Result<std::unique_ptr<GgufFile>> GgufFile::FromMemory(std::span<const uint8_t> bytes,
                                                       std::string display_name) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->path_ = std::move(display_name);
  f->base_ = bytes.data();
  f->size_ = bytes.size();
  Status s = f->Parse();
  if (!s.ok()) return s.WithContext(f->path_);
  return f;
}

Status GgufFile::Parse() {
  ByteReader r(base_, size_);
  uint32_t magic = 0;
  SPARROW_RETURN_IF_ERROR(r.Read(&magic, "magic"));
  if (magic != kGgufMagic && magic != kPwriMagic) {
    return Corrupt(
        "not a GGUF file (the first 4 bytes are neither 'GGUF' nor PowerInfer's 'PWRI')");
  }
  powerinfer_ = magic == kPwriMagic;
  SPARROW_RETURN_IF_ERROR(r.Read(&version_, "version"));
  if (version_ == 1)
    return Unsupported(
        "GGUF version 1 is obsolete; re-convert the model (versions 2 and 3 are read)");
  if (version_ != 2 && version_ != 3) {
    return Unsupported("GGUF version " + std::to_string(version_) + " (versions 2 and 3 are read)");
  }
  uint64_t n_tensors = 0, n_kv = 0;
  SPARROW_RETURN_IF_ERROR(r.Read(&n_tensors, "tensor count"));
  SPARROW_RETURN_IF_ERROR(r.Read(&n_kv, "metadata count"));
  // A key/value takes at least 8 (key length) + 4 (type) + 1 bytes; a tensor info at least 8 + 4 +
  // 4 + 8.
  if (n_kv > r.remaining() / 13) {
    return Corrupt("file is truncated or corrupt: its metadata count " + std::to_string(n_kv) +
                   " is more than fits in the " + std::to_string(size_) + "-byte file");
  }
  if (n_tensors > r.remaining() / 24) {
    return Corrupt("file is truncated or corrupt: its tensor count " + std::to_string(n_tensors) +
                   " is more than fits in the " + std::to_string(size_) + "-byte file");
  }

  kv_.reserve(n_kv);
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string_view key;
    SPARROW_RETURN_IF_ERROR(r.ReadString(&key, "metadata key " + std::to_string(i)));
    if (key.empty() || key.size() > kMaxNameLen) {
      return Corrupt("metadata key " + std::to_string(i) + " has invalid length " +
                     std::to_string(key.size()));
    }
    std::string skey(key);
    uint32_t type = 0;
    SPARROW_RETURN_IF_ERROR(r.Read(&type, "type of key " + Quote(key)));
    if (!IsKnownValueType(type)) {
      return Corrupt("key " + Quote(key) + " has unknown value type " + std::to_string(type));
    }
    GgufValue v;
    SPARROW_RETURN_IF_ERROR(ReadValue(r, static_cast<GgufValueType>(type), &v, skey));
    kv_.emplace_back(std::move(skey), std::move(v));
  }
  for (size_t i = 0; i < kv_.size(); ++i) {
    if (!kv_index_.emplace(kv_[i].first, i).second) {
      return Corrupt("metadata key " + Quote(kv_[i].first) + " appears twice");
    }
  }

  if (const GgufValue* a = Find("general.alignment")) {
    if (!a->IsInteger())
      return Corrupt("general.alignment must be an integer, found " +
                     std::string(GgufValueTypeName(a->type)));
    uint64_t al = a->type == GgufValueType::kI32 || a->type == GgufValueType::kI64 ||
                          a->type == GgufValueType::kI8 || a->type == GgufValueType::kI16
                      ? static_cast<uint64_t>(std::get<int64_t>(a->v))
                      : std::get<uint64_t>(a->v);
    if (al == 0 || (al & (al - 1)) != 0 || al > (1u << 30)) {
      return Corrupt("general.alignment is " + std::to_string(al) +
                     ", not a power of two up to 1 GiB");
    }
    alignment_ = al;
  }

  tensors_.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo t;
    std::string_view name;
    SPARROW_RETURN_IF_ERROR(r.ReadString(&name, "name of tensor " + std::to_string(i)));
    if (name.empty() || name.size() > kMaxNameLen) {
      return Corrupt("tensor " + std::to_string(i) + " has a name of invalid length " +
                     std::to_string(name.size()));
    }
    t.name = std::string(name);
    const std::string what = "tensor " + Quote(name);
    uint32_t n_dims = 0;
    SPARROW_RETURN_IF_ERROR(r.Read(&n_dims, what + " dimension count"));
    if (n_dims == 0 || n_dims > kMaxDims) {
      return Corrupt(what + " has " + std::to_string(n_dims) + " dimensions (1 to 4 allowed)");
    }
    t.dims.resize(n_dims);
    uint64_t n_el = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      SPARROW_RETURN_IF_ERROR(r.Read(&t.dims[d], what + " dimension"));
      if (t.dims[d] == 0 || t.dims[d] > (uint64_t{1} << 62)) {
        return Corrupt(what + " dimension " + std::to_string(d) + " is " +
                       std::to_string(t.dims[d]));
      }
      if (MulOverflows(n_el, t.dims[d], &n_el) || n_el > (uint64_t{1} << 62)) {
        return Corrupt(what + " has an element count that overflows");
      }
    }
    t.n_elements = n_el;
    uint32_t type = 0;
    SPARROW_RETURN_IF_ERROR(r.Read(&type, what + " type"));
    auto traits = GetTensorTypeTraits(type);
    if (!traits) {
      // Ids past the last one we know are probably a newer ggml type, not garbage.
      if (type > static_cast<uint32_t>(TensorType::kBF16) && type < 256) {
        return Unsupported(what + " has tensor type id " + std::to_string(type) +
                           ", a ggml type newer than this build of Sparrow knows");
      }
      return Corrupt(what + " has unknown tensor type id " + std::to_string(type));
    }
    t.type = static_cast<TensorType>(type);
    if (t.dims[0] % traits->block_elems != 0) {
      return Corrupt(what + " of type " + std::string(traits->name) + " has row length " +
                     std::to_string(t.dims[0]) + ", not a multiple of its block size " +
                     std::to_string(traits->block_elems));
    }
    if (MulOverflows(n_el / traits->block_elems, traits->block_bytes, &t.n_bytes)) {
      return Corrupt(what + " has a byte size that overflows");
    }
    SPARROW_RETURN_IF_ERROR(r.Read(&t.offset, what + " offset"));
    if (t.offset % alignment_ != 0) {
      return Corrupt(what + " offset " + std::to_string(t.offset) +
                     " is not a multiple of the alignment " + std::to_string(alignment_));
    }
    tensors_.push_back(std::move(t));
  }

  // The data section starts at the next multiple of the alignment after the header.
  uint64_t pos = r.pos();
  uint64_t data_start = (pos + alignment_ - 1) / alignment_ * alignment_;
  if (n_tensors > 0 && data_start > size_) {
    return Corrupt("file is truncated: the tensor data section would start at byte " +
                   std::to_string(data_start) + " but the file has " + std::to_string(size_));
  }
  data_offset_ = data_start;
  const uint64_t data_size = size_ > data_start ? size_ - data_start : 0;
  for (auto& t : tensors_) {
    uint64_t end = 0;
    if (__builtin_add_overflow(t.offset, t.n_bytes, &end) || end > data_size) {
      return Corrupt("file is truncated or tensor " + Quote(t.name) +
                     " is out of bounds: it spans bytes " + std::to_string(data_start + t.offset) +
                     "..+" + std::to_string(t.n_bytes) + " of a " + std::to_string(size_) +
                     "-byte file");
    }
    t.data = base_ + data_start + t.offset;
  }
  // Tensors must not overlap: sort by offset and compare neighbours.
  std::vector<const GgufTensorInfo*> by_offset;
  by_offset.reserve(tensors_.size());
  for (const auto& t : tensors_) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const GgufTensorInfo* a, const GgufTensorInfo* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    if (by_offset[i - 1]->offset + by_offset[i - 1]->n_bytes > by_offset[i]->offset) {
      return Corrupt("tensors " + Quote(by_offset[i - 1]->name) + " and " +
                     Quote(by_offset[i]->name) + " overlap");
    }
  }
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (!tensor_index_.emplace(tensors_[i].name, i).second) {
      return Corrupt("tensor name " + Quote(tensors_[i].name) + " appears twice");
    }
  }
  return Status::Ok();
}

const GgufValue* GgufFile::Find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const GgufTensorInfo* GgufFile::FindTensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

Status WrongType(std::string_view key, std::string_view want, const GgufValue& v) {
  return Corrupt("metadata key '" + std::string(key) + "' should be " + std::string(want) +
                 " but is " + std::string(GgufValueTypeName(v.type)));
}

Status Missing(std::string_view key) {
  return NotFound("metadata key '" + std::string(key) + "' is missing");
}

}  // namespace

Result<std::string_view> GgufFile::GetString(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return Missing(key);
  if (v->type != GgufValueType::kString) return WrongType(key, "a string", *v);
  return std::get<std::string_view>(v->v);
}

Result<uint64_t> GgufFile::GetUInt(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return Missing(key);
  if (!v->IsInteger()) return WrongType(key, "an unsigned integer", *v);
  if (const int64_t* i = std::get_if<int64_t>(&v->v)) {
    if (*i < 0)
      return Corrupt("metadata key '" + std::string(key) + "' is negative (" + std::to_string(*i) +
                     ")");
    return static_cast<uint64_t>(*i);
  }
  return std::get<uint64_t>(v->v);
}

Result<int64_t> GgufFile::GetInt(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return Missing(key);
  if (!v->IsInteger()) return WrongType(key, "an integer", *v);
  if (const uint64_t* u = std::get_if<uint64_t>(&v->v)) {
    if (*u > static_cast<uint64_t>(INT64_MAX))
      return Corrupt("metadata key '" + std::string(key) + "' is too large");
    return static_cast<int64_t>(*u);
  }
  return std::get<int64_t>(v->v);
}

Result<double> GgufFile::GetFloat(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return Missing(key);
  if (v->IsFloat()) return std::get<double>(v->v);
  if (v->IsInteger()) {
    if (const int64_t* i = std::get_if<int64_t>(&v->v)) return static_cast<double>(*i);
    return static_cast<double>(std::get<uint64_t>(v->v));
  }
  return WrongType(key, "a number", *v);
}

Result<bool> GgufFile::GetBool(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return Missing(key);
  if (v->type != GgufValueType::kBool) return WrongType(key, "a bool", *v);
  return std::get<bool>(v->v);
}

Result<const GgufArray*> GgufFile::GetArray(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return Missing(key);
  if (v->type != GgufValueType::kArray) return WrongType(key, "an array", *v);
  return &std::get<GgufArray>(v->v);
}

Result<uint64_t> GgufFile::GetUIntOr(std::string_view key, uint64_t fallback) const {
  if (!Find(key)) return fallback;
  return GetUInt(key);
}

Result<double> GgufFile::GetFloatOr(std::string_view key, double fallback) const {
  if (!Find(key)) return fallback;
  return GetFloat(key);
}

Result<bool> GgufFile::GetBoolOr(std::string_view key, bool fallback) const {
  if (!Find(key)) return fallback;
  return GetBool(key);
}

Result<std::vector<float>> GgufFile::ArrayAsFloats(const GgufArray& a, std::string_view key) {
  std::vector<float> out(a.size);
  for (uint64_t i = 0; i < a.size; ++i) {
    switch (a.elem_type) {
      case GgufValueType::kF32:
        out[i] = LoadLE<float>(a.data + 4 * i);
        break;
      case GgufValueType::kF64:
        out[i] = static_cast<float>(LoadLE<double>(a.data + 8 * i));
        break;
      default:
        return Corrupt("metadata key '" + std::string(key) +
                       "' should be an array of floats but holds " +
                       std::string(GgufValueTypeName(a.elem_type)));
    }
  }
  return out;
}

Result<std::vector<int64_t>> GgufFile::ArrayAsInts(const GgufArray& a, std::string_view key) {
  std::vector<int64_t> out(a.size);
  for (uint64_t i = 0; i < a.size; ++i) {
    switch (a.elem_type) {
      case GgufValueType::kU8:
        out[i] = a.data[i];
        break;
      case GgufValueType::kI8:
        out[i] = static_cast<int8_t>(a.data[i]);
        break;
      case GgufValueType::kU16:
        out[i] = LoadLE<uint16_t>(a.data + 2 * i);
        break;
      case GgufValueType::kI16:
        out[i] = LoadLE<int16_t>(a.data + 2 * i);
        break;
      case GgufValueType::kU32:
        out[i] = LoadLE<uint32_t>(a.data + 4 * i);
        break;
      case GgufValueType::kI32:
        out[i] = LoadLE<int32_t>(a.data + 4 * i);
        break;
      case GgufValueType::kI64:
        out[i] = LoadLE<int64_t>(a.data + 8 * i);
        break;
      case GgufValueType::kU64: {
        uint64_t u = LoadLE<uint64_t>(a.data + 8 * i);
        if (u > static_cast<uint64_t>(INT64_MAX))
          return Corrupt("metadata key '" + std::string(key) + "' holds a value too large");
        out[i] = static_cast<int64_t>(u);
        break;
      }
      default:
        return Corrupt("metadata key '" + std::string(key) +
                       "' should be an array of integers but holds " +
                       std::string(GgufValueTypeName(a.elem_type)));
    }
  }
  return out;
}

}  // namespace sparrow
