// The functions behind each app's row in the table (app_table.cpp): the launches in
// launch_forms.cpp (compiled by nvcc when the CUDA backend is built), the checks, validation,
// summaries and output files in apps.cpp. Internal to coop::apps.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <vector>

#include "coop/apps/apps.hpp"

namespace coop::apps::entry {

// ---- launch_forms.cpp
void run_bfs(Runtime& rt, const Input& in, const RunConfig& cfg, Result& r);
void run_l_sssp(Runtime& rt, const Input& in, const RunConfig& cfg, Result& r);
void run_p_sssp(Runtime& rt, const Input& in, const RunConfig& cfg, Result& r);
void run_color(Runtime& rt, const Input& in, const RunConfig& cfg, Result& r);
void run_mis(Runtime& rt, const Input& in, const RunConfig& cfg, Result& r);
void run_bc(Runtime& rt, const Input& in, const RunConfig& cfg, Result& r);
void run_octree(Runtime& rt, const Input& in, const RunConfig& cfg, Result& r);
void run_game(Runtime& rt, const Input& in, const RunConfig& cfg, Result& r);

// ---- apps.cpp
/// bc's sources: the first Input::bc_sources vertices (all when 0).
std::vector<std::uint32_t> bc_sources(const Input& in);

void check_octree(const Input& in);
void check_game(const Input& in);

Validation validate_bfs(const Input& in, const Result& r);
Validation validate_sssp(const Input& in, const Result& r);
Validation validate_color(const Input& in, const Result& r);
Validation validate_mis(const Input& in, const Result& r);
Validation validate_bc(const Input& in, const Result& r);
Validation validate_octree(const Input& in, const Result& r);
Validation validate_game(const Input& in, const Result& r);

void summarize_levels(std::ostream& os, const Input& in, const Result& r);
void summarize_distances(std::ostream& os, const Input& in, const Result& r);
void summarize_color(std::ostream& os, const Input& in, const Result& r);
void summarize_mis(std::ostream& os, const Input& in, const Result& r);
void summarize_bc(std::ostream& os, const Input& in, const Result& r);
void summarize_octree(std::ostream& os, const Input& in, const Result& r);
void summarize_game(std::ostream& os, const Input& in, const Result& r);

void write_values(std::ostream& os, const Input& in, const Result& r);
void write_bc(std::ostream& os, const Input& in, const Result& r);
void write_octree(std::ostream& os, const Input& in, const Result& r);
void write_game(std::ostream& os, const Input& in, const Result& r);

}  // namespace coop::apps::entry
