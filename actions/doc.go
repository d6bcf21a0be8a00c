// Package actions makes the external actions of an agent visible: commands
// that act outside the repository (package managers, databases, deployment and
// infrastructure CLIs, remote git operations) and so cannot be undone by
// timeagent.
//
// A session installs a directory of proxies (Install) and prepends it to the
// child's PATH. Each proxy is the timeagent executable itself under a tool's
// name; RunProxy classifies the call with the rule table (Classify), decides
// (low and medium risk run; high and critical ask on the controlling terminal,
// default No, or run under --allow-high-risk), records the call atomically in
// the session's action directory (one JSON file per call, ReadLog reads them
// back) and runs the real tool found on the rest of PATH with argv, standard
// streams, environment and exit status passed through.
//
// This is detection, not containment: a tool called by absolute path, renamed
// or copied, a shell built-in, an API call made from code or a tool not in the
// list is not seen.
//
// The package owns the proxies, the rule table and the action files; it must
// not know about the journal's storage, FUSE or the CLI's flags.
package actions
