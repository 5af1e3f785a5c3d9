// The shape list: one problem spec per line ("gemm:bias=0,dtype=bf16,k=4096,m=1,n=4096"), blank
// lines and '#' comments ignored. `attune tune --shapes FILE` reads it; libattune-rt's harvest
// (ATTUNE_HARVEST) appends to it, so both sides share this one reader. Pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace attune {

// The specs of `text`, trimmed, in order; `source` names the text in errors ("shapes.txt").
// An error when a line is not one spec (it holds a space) or when there is none.
// `lines`, when given, gets each spec's line number, for errors about it later.
Result<std::vector<std::string>> parse_shapes(std::string_view text, const std::string& source,
                                              std::vector<int>* lines = nullptr);
Result<std::vector<std::string>> read_shapes_file(const std::string& path,
                                                  std::vector<int>* lines = nullptr);

}  // namespace attune
