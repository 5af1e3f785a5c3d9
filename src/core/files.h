// Files a command reads whole and writes whole, with one line saying what is wrong: a path that
// does not exist, is a directory, or cannot be read or written. Stateless; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "core/error.h"

namespace attune {

// The whole of the file at `path`; `what` names it in errors ("shapes file", "the --verify
// file"). An error, not an exception, for a missing path, a directory or a read that fails.
Result<std::string> read_text_file(const std::string& path, std::string_view what);

// `text` as the whole of `path`. A new or regular file is replaced at once (written beside its
// target, then renamed over it, so no reader sees half of it), through a symbolic link to the
// file it names; a device or pipe (/dev/stdout, a FIFO) is written to as it is, never replaced.
Status write_text_file(const std::string& path, std::string_view text);

// Whether `a` and `b` name one existing file (relative paths, links and hard links resolved).
bool same_file(const std::string& a, const std::string& b);

}  // namespace attune
