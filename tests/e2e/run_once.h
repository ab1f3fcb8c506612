// ctest runs every test case of a binary in its own process, in parallel: a
// fixture that several cases share (exported PyTorch models, generated
// inputs) must be made once, under a lock, not once per process.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace amptrain::testing {

// Runs the shell `command` (which fills `dir`) unless a previous run of the
// same command succeeded, holding an exclusive lock on <dir>.lock meanwhile.
// True when `dir` holds the command's successful output.
inline bool RunOnceLocked(const std::string& dir, const std::string& command) {
  std::filesystem::create_directories(std::filesystem::path(dir).parent_path());
  int fd = ::open((dir + ".lock").c_str(), O_CREAT | O_RDWR, 0644);
  if (fd < 0) return false;
  ::flock(fd, LOCK_EX);
  const std::string stamp_path = dir + ".stamp";
  std::stringstream stamp;
  stamp << std::ifstream(stamp_path).rdbuf();
  bool ok = stamp.str() == command;
  if (!ok) {
    std::filesystem::remove(stamp_path);
    std::filesystem::create_directories(dir);
    ok = std::system(command.c_str()) == 0;
    if (ok) std::ofstream(stamp_path) << command;
  }
  ::flock(fd, LOCK_UN);
  ::close(fd);
  return ok;
}

}  // namespace amptrain::testing
