#include "core/files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

namespace attune {

namespace fs = std::filesystem;

namespace {

std::string named(std::string_view what, const std::string& path) {
  return what.empty() ? path : std::string(what) + " " + path;
}

}  // namespace

Result<std::string> read_text_file(const std::string& path, std::string_view what) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found)
    return Error::invalid_argument(named(what, path) + " does not exist");
  if (st.type() == fs::file_type::directory)
    return Error::invalid_argument(named(what, path) + " is a directory, not a file");
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error::io("cannot read " + named(what, path) +
                     (errno != 0 ? std::string(": ") + std::strerror(errno) : ""));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Error::io("cannot read " + named(what, path));
  return text.str();
}

Status write_text_file(const std::string& path, std::string_view text) {
  if (path.empty()) return Error::invalid_argument("no file named to write");
  std::error_code ec;
  const auto st = fs::status(path, ec);  // of what a link names
  if (st.type() == fs::file_type::directory)
    return Error::invalid_argument(path + " is a directory; give a file to write");
  auto write_to = [&](const std::string& file) -> Status {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    if (!out) return Error::io("cannot write " + path + ": " + std::strerror(errno));
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!out.flush()) return Error::io("cannot write " + path + ": " + std::strerror(errno));
    return Status::success();
  };
  if (st.type() != fs::file_type::not_found && st.type() != fs::file_type::regular)
    return write_to(path);  // a device or pipe (/dev/stdout): written, never replaced
  // A link is followed, so it stays a link to the new file.
  fs::path target = path;
  if (st.type() == fs::file_type::regular && fs::is_symlink(target, ec)) {
    target = fs::canonical(target, ec);
    if (ec) return Error::io("cannot write " + path + ": " + ec.message());
  }
  const std::string tmp = target.string() + ".tmp";
  if (Status s = write_to(tmp); !s.ok()) {
    std::remove(tmp.c_str());
    return s;
  }
  if (std::rename(tmp.c_str(), target.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return Error::io("cannot write " + path + " (renaming " + tmp + " over it: " + why + ")");
  }
  return Status::success();
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  const bool same = fs::equivalent(a, b, ec);
  return !ec && same;
}

}  // namespace attune
