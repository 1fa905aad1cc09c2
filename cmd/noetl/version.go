package main

// --version and shell completion.

import (
	"net/url"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// revision is the git commit the CLI was built from when the build
// information has none (builds with -buildvcs=false): scripts/noetl sets
// it with -ldflags "-X main.revision=<commit>[-dirty]".
var revision string

// version is the CLI's version from its build information (version()).
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = &debug.BuildInfo{}
	}
	return versionOf(bi, revision)
}

// versionOf renders build information as "<module version or git
// revision>[-dirty] (<commit time>, <go version>)": a module version when
// the binary was built from a released module, else the first 12 digits
// of the git commit it was built from (vcs.revision; "-dirty" when the
// tree had changes), else rev (scripts/noetl's -X main.revision), else
// "devel".
func versionOf(bi *debug.BuildInfo, rev string) string {
	set := map[string]string{}
	for _, s := range bi.Settings {
		set[s.Key] = s.Value
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
		if rev != "" {
			v = rev
		}
		if rev := set["vcs.revision"]; rev != "" {
			v = rev[:min(12, len(rev))]
			if set["vcs.modified"] == "true" {
				v += "-dirty"
			}
		}
	}
	var extra []string
	if t := set["vcs.time"]; t != "" {
		extra = append(extra, t)
	}
	if bi.GoVersion != "" {
		extra = append(extra, bi.GoVersion)
	}
	if len(extra) > 0 {
		v += " (" + strings.Join(extra, ", ") + ")"
	}
	return v
}

// completeExecutionIDs completes the first argument of a command that
// takes an execution id with the newest executions (GET /executions),
// each described by its status and playbook; nothing when the api does
// not answer.
func (a *app) completeExecutionIDs(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var body struct {
		Executions []struct {
			ExecutionID string `json:"execution_id"`
			Playbook    string `json:"playbook"`
			Status      string `json:"status"`
		} `json:"executions"`
	}
	q := url.Values{"limit": {"100"}}
	if _, err := a.getJSON("/executions?"+q.Encode(), "executions", &body); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, e := range body.Executions {
		if strings.HasPrefix(e.ExecutionID, toComplete) {
			out = append(out, e.ExecutionID+"\t"+e.Status+" "+e.Playbook)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
