#include "core/config.h"

#include "core/hash.h"

namespace attune {

const Value* Config::get(std::string_view name) const {
  for (const auto& [n, v] : entries_)
    if (n == name) return &v;
  return nullptr;
}

std::string Config::text() const {
  std::string out;
  for (const auto& [n, v] : entries_) {
    if (!out.empty()) out += ',';
    out += n;
    out += '=';
    out += v.text();
  }
  return out;
}

std::uint64_t Config::hash() const {
  return fnv1a64(text());
}
std::string Config::hash_hex() const {
  return hex64(hash());
}

Result<Config> Config::parse(std::string_view text) {
  std::vector<Entry> entries;
  if (text.empty()) return Config(std::move(entries));
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find(',', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view item = text.substr(pos, end - pos);
    std::size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0)
      return Error::invalid_argument("config item '" + std::string(item) +
                                     "' is not of the form name=value");
    std::string name(item.substr(0, eq));
    for (const auto& [n, v] : entries)
      if (n == name) return Error::invalid_argument("config names knob '" + name + "' twice");
    entries.emplace_back(std::move(name), Value::parse(std::string(item.substr(eq + 1))));
    pos = end + 1;
  }
  return Config(std::move(entries));
}

}  // namespace attune
