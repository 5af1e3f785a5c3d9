// The contract between attune and a backend plugin (libattune_cuda.so) loaded with dlopen. What
// crosses it is C++ (the Backend vtable, std::string), so both sides must come from one tree:
// the plugin exports its ABI version and attune refuses a plugin whose version differs from its
// own before calling anything else in it. Constants and declarations only; thread-safe.
#pragma once

#include <string>

namespace attune {

class Backend;

// Bump whenever anything that crosses dlopen changes: a virtual added to, removed from or moved
// in Backend, a change to a type a virtual takes or returns, or the factory's signature.
// 2: Backend::reference_lost() (the plugin the H200 ran on 2026-12-01 speaks 1).
inline constexpr int kPluginAbi = 2;

}  // namespace attune

extern "C" {
// The plugin ABI the plugin was built with; attune compares it with kPluginAbi.
int attune_plugin_abi();
// The CUDA plugin's factory: a backend with every kernel family, or nullptr with *error set.
attune::Backend* attune_make_cuda_backend(std::string* error);
}
