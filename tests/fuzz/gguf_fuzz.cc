// libFuzzer target for the GGUF reader: any byte string must either parse into a file whose
// every value and tensor byte can be read safely, or give a Corrupt/Unsupported status.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "engine/common/tensor_type.h"
#include "engine/model/gguf_file.h"
#include "engine/model/neuron_bundles.h"
#include "tests/util/gguf_touch.h"

namespace {

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "gguf_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

// What the reader promises about an accepted file, recomputed without overflow.
void CheckInvariants(const sparrow::GgufFile& f, const uint8_t* data, size_t size) {
  for (const sparrow::GgufTensorInfo& t : f.tensors()) {
    auto traits = sparrow::GetTensorTypeTraits(t.type);
    if (!traits) Fail("accepted unknown tensor type", t.name);
    unsigned __int128 n = 1;
    for (uint64_t d : t.dims) {
      n *= d;
      if (n > (static_cast<unsigned __int128>(1) << 64)) Fail("element count overflows", t.name);
    }
    if (n != t.n_elements) Fail("n_elements disagrees with dims", t.name);
    if (t.dims.empty() || t.dims[0] % traits->block_elems != 0) Fail("partial block", t.name);
    const unsigned __int128 bytes = n / traits->block_elems * traits->block_bytes;
    if (bytes != t.n_bytes) Fail("n_bytes disagrees with dims and type", t.name);
    if (t.data < data || t.data > data + size ||
        t.n_bytes > static_cast<uint64_t>(data + size - t.data)) {
      Fail("tensor data outside the buffer", t.name);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = sparrow::GgufFile::FromMemory(std::span<const uint8_t>(data, size), "fuzz.gguf");
  if (!f.ok()) {
    const sparrow::StatusCode code = f.status().code();
    if (code != sparrow::StatusCode::kCorrupt && code != sparrow::StatusCode::kUnsupported) {
      Fail("unexpected status code", f.status().ToString());
    }
    return 0;
  }
  CheckInvariants(**f, data, size);
  // A file of neuron bundles (sparrow convert): the layout's reader on the sizes it declares.
  if (sparrow::HasNeuronBundles(**f)) {
    auto arch = (*f)->GetString("general.architecture");
    if (arch.ok()) {
      const std::string a(*arch);
      auto layers = (*f)->GetUInt(a + ".block_count");
      auto n_ff = (*f)->GetUInt(a + ".feed_forward_length");
      auto n_embd = (*f)->GetUInt(a + ".embedding_length");
      if (layers.ok() && n_ff.ok() && n_embd.ok() && *layers <= 4096 && *n_ff <= (1u << 20) &&
          *n_embd <= (1u << 20) && *layers * *n_ff <= (1u << 24)) {
        auto layout = sparrow::ReadNeuronBundleLayout(**f, static_cast<int64_t>(*layers),
                                                      static_cast<int64_t>(*n_ff),
                                                      static_cast<int64_t>(*n_embd));
        if (!layout.ok() && layout.status().code() == sparrow::StatusCode::kInternal) {
          Fail("internal error from the bundle layout", layout.status().ToString());
        }
      }
    }
  }
  volatile uint64_t sink = sparrow::testing::TouchGguf(**f);
  (void)sink;
  return 0;
}
