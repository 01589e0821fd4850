#pragma once
// The version sparrowd and sparrowctl report (--version, the admin status). Kept equal to
// project(VERSION) in the top-level CMakeLists.txt.
namespace sparrow {
inline constexpr const char* kSparrowVersion = "0.1.0";
}
