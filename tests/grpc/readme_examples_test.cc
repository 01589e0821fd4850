// The README's "Talking to sparrowd" steps as a newcomer runs them, read from README.md itself:
// the gRPC examples with sparrowctl, and the admin steps (a key made in local/, sparrowd started
// with the flags given to deploy/run.sh, sparrowctl with that key), against a real sparrowd on
// free loopback ports. Only the ports (and a scratch directory for local/) differ.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "tests/util/sparrowd_process.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using testing::SparrowdProcess;

// The ```sh blocks of the README's section `heading`, each as its lines.
std::vector<std::vector<std::string>> ShellBlocks(const std::string& heading) {
  const std::string readme = testing::ReadFileOrDie(std::string(SPARROW_SOURCE_DIR) + "/README.md");
  const size_t from = readme.find("\n## " + heading + "\n");
  const size_t to = readme.find("\n## ", from + 1);
  std::istringstream in(readme.substr(from, to - from));
  std::vector<std::vector<std::string>> blocks;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("```", 0) == 0) {
      inside = !inside && line == "```sh";
      if (inside) blocks.emplace_back();
    } else if (inside) {
      blocks.back().push_back(line.substr(0, line.find("  #")));  // without the comment
    }
  }
  return blocks;
}

// The block that holds `needle`; fails the test when there is none.
std::vector<std::string> BlockWith(const std::string& needle) {
  for (const auto& block : ShellBlocks("Talking to sparrowd")) {
    for (const std::string& line : block) {
      if (line.find(needle) != std::string::npos) return block;
    }
  }
  ADD_FAILURE() << "no README block with " << needle;
  return {};
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

std::unique_ptr<SparrowdProcess> Start(std::vector<std::string> args) {
  SparrowdProcess::Options o;
  o.args = {"--model",     testing::ModelPath("stories260K.gguf"),
            "--port",      "0",
            "--grpc-port", "0",
            "--threads",   "1"};
  o.args.insert(o.args.end(), args.begin(), args.end());
  std::string error;
  auto p = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
  EXPECT_NE(p, nullptr) << error;
  return p;
}

// `line` with build/bin/sparrowctl as the built one on `grpc_port`, the operator's own device
// list left out.
testing::CommandResult RunCtl(const std::string& line, int grpc_port) {
  const std::string ctl = "SPARROW_CTL_CONFIG=/dev/null " + std::string(SPARROWCTL) + " --port " +
                          std::to_string(grpc_port);
  return testing::RunCommand(Replace(line, "build/bin/sparrowctl", ctl));
}

TEST(ReadmeExamplesTest, TheGrpcExamplesRunAsWritten) {
  auto p = Start({});
  ASSERT_NE(p, nullptr);
  int ran = 0;
  for (const std::string& line : BlockWith("sparrowctl generate")) {
    if (line.rfind("build/bin/sparrowctl ", 0) != 0) continue;
    const testing::CommandResult r = RunCtl(line, p->grpc_port());
    ++ran;
    EXPECT_EQ(r.exit_code, 0) << line << "\n" << r.out;
    if (line.find("--max-tokens 32") != std::string::npos) {
      EXPECT_NE(r.out.find(" + 32 generated tokens"), std::string::npos) << line << "\n" << r.out;
    }
    if (line.find("--json") != std::string::npos) {
      EXPECT_NE(r.out.find("FINISH_REASON_LENGTH"), std::string::npos) << line << "\n" << r.out;
    }
  }
  EXPECT_GE(ran, 2);
}

TEST(ReadmeExamplesTest, TheAdminStepsKeepTheirFilesInLocal) {
  const std::string dir = testing::TempPath("readme");
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  const std::string local = dir + "/local/";
  std::vector<std::string> run_args, ctl_lines;
  for (const std::string& line : BlockWith("local/admin.keys")) {
    if (line.rfind("mkdir ", 0) == 0 || line.rfind("openssl ", 0) == 0) {
      ASSERT_EQ(testing::RunCommand("cd " + dir + " && " + line).exit_code, 0) << line;
    } else if (line.rfind("deploy/run.sh ", 0) == 0) {
      std::istringstream words(line.substr(std::string("deploy/run.sh ").size()));
      for (std::string w; words >> w;) run_args.push_back(Replace(w, "local/", local));
    } else if (line.rfind("build/bin/sparrowctl ", 0) == 0) {
      ctl_lines.push_back(Replace(line, "local/", local));
    }
  }
  struct stat st {};
  ASSERT_EQ(stat((local + "admin.keys").c_str(), &st), 0) << "the README makes no local/admin.keys";
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_FALSE(run_args.empty()) << "the README starts no deploy/run.sh with the key";
  auto p = Start(run_args);
  ASSERT_NE(p, nullptr);
  ASSERT_GE(ctl_lines.size(), 2u);
  for (const std::string& line : ctl_lines) {
    const testing::CommandResult r = RunCtl(line, p->grpc_port());
    EXPECT_EQ(r.exit_code, 0) << line << "\n" << r.out;
  }
  // What the steps write stays out of git (when this is a git checkout).
  const std::string git = "git -C " + std::string(SPARROW_SOURCE_DIR);
  if (testing::RunCommand(git + " rev-parse --git-dir").exit_code == 0) {
    for (const char* path : {"local/admin.keys", "local/audit.jsonl", "local/sparrow.key"}) {
      EXPECT_EQ(testing::RunCommand(git + " check-ignore -q " + path).exit_code, 0) << path;
    }
  }
}

}  // namespace
}  // namespace sparrow
