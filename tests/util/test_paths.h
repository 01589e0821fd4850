#pragma once
// Paths of the shared models and reference data, and a skip helper for when they are absent.
#include <string>

namespace sparrow::testing {

// ../shared beside the checkout (overridable with the SPARROW_SHARED_DIR environment variable).
std::string SharedDir();
std::string ModelPath(const std::string& name);    // SharedDir()/models/<name>
std::string TestdataPath(const std::string& rel);  // SharedDir()/testdata/<rel>
bool FileExists(const std::string& path);
std::string ReadFileOrDie(const std::string& path);

}  // namespace sparrow::testing

namespace sparrow::testing {
// A fresh path under the test temp directory, unique per process and call; it and the files named
// after it are removed when the test process exits (SPARROW_KEEP_TEST_FILES=1 keeps them).
std::string TempPath(const std::string& name);
}  // namespace sparrow::testing
