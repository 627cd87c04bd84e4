// What the binary was built from (docs/results.md: git_commit, provenance_json). The commit
// is taken at every build (cmake/git_commit.cmake), with "-dirty" when tracked files differed
// from it, so a results file never names a commit the binary was not built from.
#pragma once

namespace wb::app {

const char* build_git_commit();

}  // namespace wb::app
