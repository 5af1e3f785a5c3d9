#include "graph/model.h"

#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/files.h"

namespace attune::graph {

namespace {

using nlohmann::json;

// The fields a config may have; anything else is refused, so a typo is not silently ignored.
const std::set<std::string>& known_fields() {
  static const std::set<std::string> fields = {"name",
                                               "hidden_size",
                                               "intermediate_size",
                                               "num_attention_heads",
                                               "num_key_value_heads",
                                               "head_dim",
                                               "num_hidden_layers",
                                               "rms_norm_eps",
                                               "rope_theta",
                                               "qk_norm",
                                               "rope_scaling",
                                               "dtype"};
  return fields;
}

class Reader {
 public:
  Reader(const json& j, std::string source) : j_(j), source_(std::move(source)) {}

  Error bad(const std::string& field, const std::string& what) const {
    return Error::invalid_argument(fmt::format("{}: {} {}", source_, field, what));
  }
  Result<std::int64_t> positive(const json& obj, const std::string& field) const {
    if (!obj.contains(field)) return bad(field, "is missing (a positive integer)");
    const json& v = obj.at(field);
    if (!v.is_number_integer() || v.get<std::int64_t>() <= 0)
      return bad(field, "must be a positive integer, not " + v.dump());
    return v.get<std::int64_t>();
  }
  Result<double> positive_real(const json& obj, const std::string& field) const {
    if (!obj.contains(field)) return bad(field, "is missing (a positive number)");
    const json& v = obj.at(field);
    if (!v.is_number() || !(v.get<double>() > 0))
      return bad(field, "must be a positive number, not " + v.dump());
    return v.get<double>();
  }
  Result<std::string> text(const json& obj, const std::string& field) const {
    if (!obj.contains(field)) return bad(field, "is missing (a string)");
    const json& v = obj.at(field);
    if (!v.is_string() || v.get<std::string>().empty())
      return bad(field, "must be a non-empty string, not " + v.dump());
    return v.get<std::string>();
  }
  const json& root() const { return j_; }

 private:
  const json& j_;
  std::string source_;
};

}  // namespace

Result<ModelConfig> parse_model(const std::string& text, const std::string& source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    return Error::invalid_argument(
        fmt::format("{}: not JSON ({}); a model config is one JSON object of config.json's "
                    "fields (see models/)",
                    source, e.what()));
  }
  if (!j.is_object())
    return Error::invalid_argument(source + ": a model config is one JSON object, not " +
                                   std::string(j.type_name()));
  for (const auto& [key, _] : j.items())
    if (!known_fields().count(key)) {
      std::string known;
      for (const auto& f : known_fields()) known += (known.empty() ? "" : ", ") + f;
      return Error::invalid_argument(
          fmt::format("{}: unknown field '{}' (known: {})", source, key, known));
    }
  Reader r(j, source);
  ModelConfig m;
  ATTUNE_ASSIGN(m.name, r.text(j, "name"));
  ATTUNE_ASSIGN(m.hidden_size, r.positive(j, "hidden_size"));
  ATTUNE_ASSIGN(m.intermediate_size, r.positive(j, "intermediate_size"));
  ATTUNE_ASSIGN(m.num_attention_heads, r.positive(j, "num_attention_heads"));
  ATTUNE_ASSIGN(m.num_key_value_heads, r.positive(j, "num_key_value_heads"));
  ATTUNE_ASSIGN(m.head_dim, r.positive(j, "head_dim"));
  ATTUNE_ASSIGN(m.num_hidden_layers, r.positive(j, "num_hidden_layers"));
  ATTUNE_ASSIGN(m.rms_norm_eps, r.positive_real(j, "rms_norm_eps"));
  ATTUNE_ASSIGN(m.rope_theta, r.positive_real(j, "rope_theta"));
  if (!j.contains("qk_norm") || !j.at("qk_norm").is_boolean())
    return r.bad("qk_norm", "must be true or false (whether q and k get a per-head RMSNorm)");
  m.qk_norm = j.at("qk_norm").get<bool>();
  if (j.contains("dtype")) {
    ATTUNE_ASSIGN(m.dtype, r.text(j, "dtype"));
    if (m.dtype != "bf16" && m.dtype != "fp16")
      return r.bad("dtype", "must be bf16 or fp16, not '" + m.dtype + "'");
  }
  if (j.contains("rope_scaling") && !j.at("rope_scaling").is_null()) {
    const json& s = j.at("rope_scaling");
    if (!s.is_object()) return r.bad("rope_scaling", "must be an object or null");
    RopeScaling rs;
    ATTUNE_ASSIGN(rs.rope_type, r.text(s, "rope_type"));
    if (rs.rope_type != "llama3")
      return r.bad("rope_scaling.rope_type", "'" + rs.rope_type + "' is not known (llama3)");
    ATTUNE_ASSIGN(rs.factor, r.positive_real(s, "factor"));
    ATTUNE_ASSIGN(rs.low_freq_factor, r.positive_real(s, "low_freq_factor"));
    ATTUNE_ASSIGN(rs.high_freq_factor, r.positive_real(s, "high_freq_factor"));
    ATTUNE_ASSIGN(rs.original_max_position_embeddings,
                  r.positive(s, "original_max_position_embeddings"));
    m.rope_scaling = rs;
  }
  // What the layer's kernels need of the sizes together.
  if (m.num_attention_heads % m.num_key_value_heads != 0)
    return Error::invalid_argument(fmt::format(
        "{}: num_attention_heads {} is not a multiple of num_key_value_heads {} (grouped-query "
        "attention shares each KV head among the query heads)",
        source, m.num_attention_heads, m.num_key_value_heads));
  if (m.head_dim % 2 != 0)
    return r.bad("head_dim", "must be even (RoPE rotates pairs of elements)");
  return m;
}

Result<ModelConfig> load_model(const std::string& path) {
  auto text = read_text_file(path, "model config");
  if (!text)
    return Error::invalid_argument(text.error().message() + " (models/ holds the known ones)");
  return parse_model(*text, path);
}

}  // namespace attune::graph
