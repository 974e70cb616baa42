# Writes OUT (a header defining COOP_GIT_COMMIT) from `git describe` in SRC, touching it only
# when the commit changes, so that results name the commit their binary was built from.
execute_process(COMMAND git describe --always --dirty --abbrev=12 WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT commit)
  set(commit "unknown")
endif()
set(text "#define COOP_GIT_COMMIT \"${commit}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
