# include/coop/version.hpp is checked in (so the headers compile on their own, before any
# configure step); this check keeps it equal to project(VERSION) at every configure.
file(STRINGS ${PROJECT_SOURCE_DIR}/include/coop/version.hpp _coop_version_lines
     REGEX "^#define COOP_VERSION_(MAJOR|MINOR|PATCH|STRING) ")
set(_coop_header_version "")
foreach(_part MAJOR MINOR PATCH)
  string(REGEX MATCH "COOP_VERSION_${_part} ([0-9]+)" _m "${_coop_version_lines}")
  list(APPEND _coop_header_version "${CMAKE_MATCH_1}")
endforeach()
list(JOIN _coop_header_version "." _coop_header_version)
string(REGEX MATCH "COOP_VERSION_STRING \"([^\"]*)\"" _m "${_coop_version_lines}")
set(_coop_header_string "${CMAKE_MATCH_1}")
if(NOT _coop_header_version STREQUAL PROJECT_VERSION OR
   NOT _coop_header_string STREQUAL PROJECT_VERSION)
  message(FATAL_ERROR
          "include/coop/version.hpp says ${_coop_header_version} (\"${_coop_header_string}\") but "
          "project(coop VERSION ${PROJECT_VERSION}): update the header with the project version")
endif()
