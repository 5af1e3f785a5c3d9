#include "runtime/selector.h"

#include <fcntl.h>
#include <strings.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace attune::runtime {

namespace {

constexpr std::size_t kInitialCells = 64;

std::string describe(const DeviceFingerprint& d) {
  return fmt::format("{} {} {} SMs (key {})", d.name, d.arch, d.sm_count, d.key());
}

}  // namespace

SelectorOptions SelectorOptions::from_env() {
  SelectorOptions o;
  const char* log = std::getenv("ATTUNE_LOG_TUNED");
  // Off unless set to something other than a word for no.
  o.log_tuned = log && *log && std::strcmp(log, "0") != 0 && strcasecmp(log, "false") != 0 &&
                strcasecmp(log, "no") != 0 && strcasecmp(log, "off") != 0;
  if (const char* h = std::getenv("ATTUNE_HARVEST")) o.harvest_path = h;
  return o;
}

std::unique_ptr<SlotMap::Cells> SlotMap::make_cells(std::size_t capacity) {
  auto c = std::make_unique<Cells>();
  c->mask = capacity - 1;
  c->at = std::make_unique<std::atomic<Slot*>[]>(capacity);
  for (std::size_t i = 0; i < capacity; ++i) c->at[i].store(nullptr, std::memory_order_relaxed);
  return c;
}

SlotMap::SlotMap() {
  all_cells_.push_back(make_cells(kInitialCells));
  cells_.store(all_cells_.back().get(), std::memory_order_release);
}

Slot* SlotMap::insert(std::unique_ptr<Slot> slot) {
  Cells* c = cells_.load(std::memory_order_relaxed);
  // At most half full, so probes stay short and always end at an empty cell.
  if (2 * (slots_.size() + 1) > c->mask + 1) {
    auto bigger = make_cells(2 * (c->mask + 1));
    for (const auto& s : slots_) {
      std::size_t i = hash(s->key) & bigger->mask;
      while (bigger->at[i].load(std::memory_order_relaxed)) i = (i + 1) & bigger->mask;
      bigger->at[i].store(s.get(), std::memory_order_relaxed);
    }
    all_cells_.push_back(std::move(bigger));
    c = all_cells_.back().get();
    cells_.store(c, std::memory_order_release);
  }
  Slot* s = slot.get();
  slots_.push_back(std::move(slot));
  std::size_t i = hash(s->key) & c->mask;
  while (c->at[i].load(std::memory_order_relaxed)) i = (i + 1) & c->mask;
  c->at[i].store(s, std::memory_order_release);
  return s;
}

Result<table::Table> Selector::read_table(const std::string& path) {
  std::error_code ec;
  if (const auto type = std::filesystem::status(path, ec).type();
      type != std::filesystem::file_type::regular &&
      type != std::filesystem::file_type::not_found &&
      type != std::filesystem::file_type::directory)
    return Error::invalid_argument(path + " is not a regular file; a table is a file");
  return table::load_table(path);
}

Result<std::unique_ptr<Selector>> Selector::open(const std::string& table_path,
                                                 const DeviceFingerprint& here,
                                                 const SelectorOptions& options,
                                                 const RowCheck& check) {
  std::optional<table::Table> table;
  if (!table_path.empty()) {
    ATTUNE_ASSIGN(table, read_table(table_path));
  }
  return open(table_path, std::move(table), here, options, check);
}

Result<std::unique_ptr<Selector>> Selector::open(const std::string& table_path,
                                                 std::optional<table::Table> table,
                                                 const DeviceFingerprint& here,
                                                 const SelectorOptions& options,
                                                 const RowCheck& check) {
  std::unique_ptr<Selector> s(new Selector());
  s->table_path_ = table_path;
  s->options_ = options;
  if (table) {
    s->table_ = std::make_unique<const table::Table>(std::move(*table));
    auto index = TableIndex::build(*s->table_);
    if (!index) return index.error().with_context(table_path);
    s->index_ = std::move(*index);
    if (check) {
      for (const IndexedRow& r : s->index_.rows()) {
        Problem p = r.row->problem;
        if (r.bucketed) {
          auto attrs = p.attrs();
          attrs[signature_of(r.op)->sizes.front()] = std::to_string(r.row->bucket->points.front());
          p = Problem(p.op(), std::move(attrs));
        }
        auto config = Config::parse(r.row->config);
        if (!config) return config.error().with_context(table_path + ": " + r.label);
        if (Status st = check(p, *config); !st)
          return Error::invalid_argument(fmt::format("{}: {}: config '{}' cannot run: {}",
                                                     table_path, r.label, r.row->config,
                                                     st.error().message()));
      }
    }
    for (const std::string& unused : s->index_.unused_op_tables())
      fmt::print(
          stderr,
          "attune-rt: {}: libattune-rt has no entry point for '{}'; those rows are not used\n",
          table_path, unused);
    if (s->table_->device.key() != here.key()) {
      s->device_mismatch_ = true;
      fmt::print(stderr,
                 "attune-rt: {} was tuned for another device ({}); this is {}. Every call runs the "
                 "baseline.\n",
                 table_path, describe(s->table_->device), describe(here));
    }
  }
  if (!options.harvest_path.empty()) {
    // Shapes already in the file are not appended again, by this process or a later one. Only a
    // regular file of a sane size is read: a pipe or device (ATTUNE_HARVEST=/dev/stderr) would
    // block or never end, inside the user's program.
    std::error_code ec;
    const auto type = std::filesystem::status(options.harvest_path, ec).type();
    const auto size = type == std::filesystem::file_type::regular
                          ? std::filesystem::file_size(options.harvest_path, ec)
                          : 0;
    constexpr std::uintmax_t kMaxHarvestBytes = 64u << 20;
    std::string all;
    if (type != std::filesystem::file_type::regular &&
        type != std::filesystem::file_type::not_found) {
      fmt::print(stderr, "attune-rt: ATTUNE_HARVEST {} is not a regular file; harvesting is off\n",
                 options.harvest_path);
      s->options_.harvest_path.clear();
    } else if (size > kMaxHarvestBytes) {
      fmt::print(stderr,
                 "attune-rt: ATTUNE_HARVEST {} holds {} MiB, more than a shape list does; "
                 "harvesting is off\n",
                 options.harvest_path, size >> 20);
      s->options_.harvest_path.clear();
    } else if (type == std::filesystem::file_type::regular) {
      std::ifstream in(options.harvest_path, std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      all = text.str();
    }
    s->harvest_needs_newline_ = !all.empty() && all.back() != '\n';
    std::istringstream lines(all);
    for (std::string line; std::getline(lines, line);) {
      auto first = line.find_first_not_of(" \t\r");
      if (first == std::string::npos || line[first] == '#') continue;
      auto last = line.find_last_not_of(" \t\r");
      s->harvested_.insert(line.substr(first, last - first + 1));
    }
  }
  return s;
}

Selector::~Selector() {
  if (!options_.log_tuned) return;
  Counters c = counters();
  fmt::print(stderr, "attune-rt: {} hits, {} misses over {} distinct shapes{}\n", c.hits, c.misses,
             c.shapes, table_path_.empty() ? " (no table)" : " with " + table_path_);
}

Slot& Selector::first_call(const ShapeKey& key) {
  std::lock_guard lock(mu_);
  if (Slot* s = slots_.find(key)) {  // another thread's first call won
    s->calls.fetch_add(1, std::memory_order_relaxed);
    return *s;
  }
  auto slot = std::make_unique<Slot>();
  slot->key = key;
  // Keys come from the runtime's entry points, each of a registered op; a key of none is a miss
  // whose launch then fails with this error rather than running another op's baseline.
  const OpSignature* op = signature_of(key.op);
  auto problem = problem_of(key);
  slot->problem = problem ? problem->text() : problem.error().message();
  const std::string_view axis = op ? std::string_view(op->sizes.front()) : std::string_view();
  if (!table_) {
    slot->why = "miss: no table";
  } else if (device_mismatch_) {
    slot->why = "miss: the table was tuned for another device";
  } else if (const IndexedRow* r = index_.find(key)) {
    slot->matched = r;
    slot->why = r->bucketed
                    ? fmt::format("hit: {}={} in bucket [{}, {}]", axis, key.axis(), r->lo, r->hi)
                    : "hit";
  } else {
    slot->why = "miss: no row for this shape";
  }
  slot->row.store(slot->matched, std::memory_order_relaxed);
  slot->calls.store(1, std::memory_order_relaxed);
  if (options_.log_tuned) {
    if (const IndexedRow* r = slot->matched)
      fmt::print(stderr, "attune-rt: hit {} -> {}{}: {} {}\n", slot->problem, r->label,
                 r->bucketed
                     ? fmt::format(", bucketed: {}={} in [{}, {}]", axis, key.axis(), r->lo, r->hi)
                     : "",
                 r->row->backend, r->row->config);
    else
      fmt::print(stderr, "attune-rt: miss {} ({}) -> baseline {}\n", slot->problem,
                 slot->why.substr(6), op ? op->baseline_config : "(none)");
  }
  if (!slot->matched && problem) harvest(slot->problem);
  return *slots_.insert(std::move(slot));
}

void Selector::harvest(const std::string& problem) {
  if (options_.harvest_path.empty() || !harvested_.insert(problem).second) return;
  std::string line = (harvest_needs_newline_ ? "\n" : "") + problem + "\n";
  const int fd =
      ::open(options_.harvest_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  // One write per line with O_APPEND: processes sharing the file do not interleave lines.
  const bool ok =
      fd >= 0 && ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  const int err = errno;
  if (fd >= 0) ::close(fd);
  if (!ok) {
    fmt::print(stderr, "attune-rt: cannot append to ATTUNE_HARVEST file {}: {}; harvesting stops\n",
               options_.harvest_path, std::strerror(err));
    options_.harvest_path.clear();
    return;
  }
  harvest_needs_newline_ = false;
}

void Selector::demote(Slot& slot, const std::string& why) {
  std::lock_guard lock(mu_);
  const IndexedRow* r = slot.row.exchange(nullptr, std::memory_order_acq_rel);
  if (!r) return;
  // Always said, not only with ATTUNE_LOG_TUNED: a tuned row that does not run is a finding.
  fmt::print(stderr, "attune-rt: {} cannot run {} here: {}; the baseline runs instead\n", r->label,
             slot.problem, why);
}

Counters Selector::counters() const {
  std::lock_guard lock(mu_);
  Counters c;
  for (const auto& s : slots_.slots()) {
    const std::uint64_t n = s->calls.load(std::memory_order_relaxed);
    (s->row.load(std::memory_order_relaxed) ? c.hits : c.misses) += n;
    ++c.shapes;
  }
  return c;
}

}  // namespace attune::runtime
