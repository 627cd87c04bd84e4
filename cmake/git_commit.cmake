# Run at every build (not only at configure time): the commit the binary is built from, with
# "-dirty" when tracked files differ from it, written to OUT only when it changed (so an
# unchanged tree recompiles nothing). Before, the commit was taken when CMake configured the
# build tree, and every later build of a newer or edited tree still claimed that commit in its
# results files (app/results/build_info.h).
#   cmake -DSRC=<source dir> -DOUT=<generated .cpp> -P cmake/git_commit.cmake
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT commit)
  set(commit "unknown")
else()
  execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY ${SRC}
                  OUTPUT_VARIABLE changes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(changes)
    string(APPEND commit "-dirty")
  endif()
endif()
set(text "// Generated at build time by cmake/git_commit.cmake: do not edit.\n#include \"app/results/build_info.h\"\nconst char* wb::app::build_git_commit() { return \"${commit}\"; }\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
else()
  set(old "")
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
