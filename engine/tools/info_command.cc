#include "engine/tools/info_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "engine/model/gguf_file.h"

namespace sparrow::tools {
namespace {

std::string Printable(std::string_view s, size_t max_len) {
  std::string out;
  for (char c : s.substr(0, max_len)) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (static_cast<unsigned char>(c) < 0x20)
      out += '?';
    else
      out += c;
  }
  if (s.size() > max_len) out += "...";
  return out;
}

std::string ScalarToString(const GgufValue& v) {
  if (auto* u = std::get_if<uint64_t>(&v.v)) return std::to_string(*u);
  if (auto* i = std::get_if<int64_t>(&v.v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v.v)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", *d);
    return buf;
  }
  if (auto* b = std::get_if<bool>(&v.v)) return *b ? "true" : "false";
  if (auto* s = std::get_if<std::string_view>(&v.v)) return "\"" + Printable(*s, 120) + "\"";
  return "?";
}

std::string ArrayToString(const GgufArray& a, std::string_view key, bool all) {
  const uint64_t shown = all ? a.size : std::min<uint64_t>(a.size, 8);
  std::string out =
      "[" + std::string(GgufValueTypeName(a.elem_type)) + " x " + std::to_string(a.size) + "] ";
  if (a.elem_type == GgufValueType::kString) {
    for (uint64_t i = 0; i < shown; ++i)
      out += (i ? ", \"" : "\"") + Printable(a.strings[i], 40) + "\"";
  } else if (a.elem_type == GgufValueType::kF32 || a.elem_type == GgufValueType::kF64) {
    auto f = GgufFile::ArrayAsFloats(a, key);
    for (uint64_t i = 0; f.ok() && i < shown; ++i) out += (i ? ", " : "") + std::to_string((*f)[i]);
  } else if (a.elem_type != GgufValueType::kBool) {
    auto v = GgufFile::ArrayAsInts(a, key);
    for (uint64_t i = 0; v.ok() && i < shown; ++i) out += (i ? ", " : "") + std::to_string((*v)[i]);
  }
  if (shown < a.size) out += ", ...";
  return out;
}

}  // namespace

void RegisterInfoCommand(CLI::App& app, InfoOptions& opts, int& exit_code) {
  CLI::App* cmd = app.add_subcommand("info", "Print a GGUF model's metadata and tensor table");
  cmd->add_option("model", opts.model, "Path of the GGUF file")->required();
  cmd->add_flag("--all", opts.all_values, "Print long arrays (vocabularies) in full");
  cmd->callback([&opts, &exit_code] { exit_code = RunInfo(opts); });
}

int RunInfo(const InfoOptions& opts) {
  auto file = GgufFile::Open(opts.model);
  if (!file.ok()) {
    std::fprintf(stderr, "sparrow info: %s\n", file.status().ToString().c_str());
    return 1;
  }
  const GgufFile& f = **file;
  std::printf("file: %s\nGGUF version %u, %llu bytes, alignment %llu, data at byte %llu\n",
              f.path().c_str(), f.version(), static_cast<unsigned long long>(f.file_size()),
              static_cast<unsigned long long>(f.alignment()),
              static_cast<unsigned long long>(f.data_offset()));
  std::printf("\nmetadata (%zu keys):\n", f.metadata().size());
  for (const auto& [key, value] : f.metadata()) {
    std::string text = value.type == GgufValueType::kArray
                           ? ArrayToString(std::get<GgufArray>(value.v), key, opts.all_values)
                           : ScalarToString(value);
    std::printf("  %-44s %s\n", key.c_str(), text.c_str());
  }
  std::printf("\ntensors (%zu):\n", f.tensors().size());
  uint64_t total = 0;
  for (const auto& t : f.tensors()) {
    std::string dims;
    for (size_t i = 0; i < t.dims.size(); ++i) dims += (i ? " x " : "") + std::to_string(t.dims[i]);
    std::printf("  %-32s %-6s %-22s %12llu bytes\n", t.name.c_str(),
                std::string(TensorTypeName(t.type)).c_str(), dims.c_str(),
                static_cast<unsigned long long>(t.n_bytes));
    total += t.n_bytes;
  }
  std::printf("  total tensor bytes: %llu\n", static_cast<unsigned long long>(total));
  return 0;
}

}  // namespace sparrow::tools
