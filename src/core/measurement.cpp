#include "core/measurement.h"

#include <cmath>

#include <nlohmann/json.hpp>

namespace attune {

std::string_view to_string(Regime r) {
  return r == Regime::kRank ? "rank" : "deploy";
}

std::optional<Regime> regime_from_string(std::string_view s) {
  if (s == "rank") return Regime::kRank;
  if (s == "deploy") return Regime::kDeploy;
  return std::nullopt;
}

std::string_view to_string(CacheState c) {
  return c == CacheState::kWarm ? "warm" : "cold";
}

std::optional<CacheState> cache_state_from_string(std::string_view s) {
  if (s == "warm") return CacheState::kWarm;
  if (s == "cold") return CacheState::kCold;
  return std::nullopt;
}

void to_json(nlohmann::json& j, const Measurement& m) {
  j = nlohmann::json{{"regime", to_string(m.regime)},
                     {"cache", to_string(m.cache)},
                     {"samples", m.samples},
                     {"median_us", m.median_us},
                     {"min_us", m.min_us},
                     {"max_us", m.max_us},
                     {"noise", m.noise},
                     {"sm_clock_mhz", m.sm_clock_mhz},
                     {"throttle", m.throttle}};
  if (!m.parts_us.empty()) {
    j["parts_us"] = m.parts_us;
    j["parts_floor_us"] = m.parts_floor_us;
  }
}

void to_json(nlohmann::json& j, const Outcome& o) {
  j = nlohmann::json{{"verdict", to_string(o.verdict)}, {"message", o.message}};
  if (o.measurement) j["measurement"] = *o.measurement;
  if (o.check)
    // JSON has no NaN: a non-finite error travels as null and reads back as NaN.
    j["check"] = {{"metric", o.check->metric},
                  {"value", std::isfinite(o.check->value) ? nlohmann::json(o.check->value)
                                                          : nlohmann::json(nullptr)},
                  {"tolerance", o.check->tolerance}};
}

Result<Outcome> outcome_from_json(const nlohmann::json& j) {
  try {
    Outcome o;
    auto v = verdict_from_string(j.at("verdict").get<std::string>());
    if (!v) return Error::corrupt("unknown verdict '" + j.at("verdict").get<std::string>() + "'");
    o.verdict = *v;
    o.message = j.value("message", "");
    if (j.contains("measurement")) {
      const auto& mj = j.at("measurement");
      Measurement m;
      auto r = regime_from_string(mj.at("regime").get<std::string>());
      auto c = cache_state_from_string(mj.at("cache").get<std::string>());
      if (!r || !c) return Error::corrupt("measurement has an unknown regime or cache state");
      m.regime = *r;
      m.cache = *c;
      m.samples = mj.at("samples").get<int>();
      m.median_us = mj.at("median_us").get<double>();
      m.min_us = mj.at("min_us").get<double>();
      m.max_us = mj.at("max_us").get<double>();
      m.noise = mj.at("noise").get<double>();
      m.sm_clock_mhz = mj.value("sm_clock_mhz", 0);
      m.throttle = mj.value("throttle", "");
      if (mj.contains("parts_us")) {
        m.parts_us = mj.at("parts_us").get<std::vector<double>>();
        m.parts_floor_us = mj.at("parts_floor_us").get<double>();
      }
      o.measurement = m;
    }
    if (j.contains("check")) {
      const auto& cj = j.at("check");
      double value = cj.at("value").is_null() ? std::nan("") : cj.at("value").get<double>();
      o.check =
          ErrorCheck{cj.at("metric").get<std::string>(), value, cj.at("tolerance").get<double>()};
    }
    return o;
  } catch (const nlohmann::json::exception& e) {
    return Error::corrupt(std::string("outcome: ") + e.what());
  }
}

}  // namespace attune
