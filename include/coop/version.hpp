/// \file
/// The version of coop these headers belong to (the project's version in CMakeLists.txt;
/// configuring checks that the two agree).
#pragma once

/// Major version: changes that break source compatibility.
#define COOP_VERSION_MAJOR 0
/// Minor version: new features; before 1.0 also incompatible changes (see CHANGELOG.md).
#define COOP_VERSION_MINOR 2
/// Patch version: fixes only.
#define COOP_VERSION_PATCH 0
/// "MAJOR.MINOR.PATCH".
#define COOP_VERSION_STRING "0.2.0"
/// One number that grows with every release, for `#if COOP_VERSION >= 200` style tests:
/// MAJOR * 10000 + MINOR * 100 + PATCH.
#define COOP_VERSION (COOP_VERSION_MAJOR * 10000 + COOP_VERSION_MINOR * 100 + COOP_VERSION_PATCH)
