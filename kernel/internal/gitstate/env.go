package gitstate

import (
	"strconv"
	"strings"
)

// commandConfig is the git configuration every command in a task gets: a
// fresh copy has new inode numbers and change times, and with these git
// trusts size and mtime alone, so the first `git status` in a copy does not
// re-read every file.
var commandConfig = [][2]string{
	{"core.checkStat", "minimal"},
	{"core.trustctime", "false"},
}

// CommandEnv returns environ with git's environment configuration
// (GIT_CONFIG_COUNT, GIT_CONFIG_KEY_n, GIT_CONFIG_VALUE_n) extended by
// core.checkStat=minimal and core.trustctime=false. Pairs already in environ
// keep their numbers; a GIT_CONFIG_COUNT that is not a number is replaced
// (and its pairs dropped), since git would refuse to run with it. The
// copy's config file is never edited.
func CommandEnv(environ []string) []string {
	count, valid := 0, true
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "GIT_CONFIG_COUNT="); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 1<<16 {
				valid = false
			} else {
				count = n
			}
		}
	}
	out := make([]string, 0, len(environ)+2*len(commandConfig)+1)
	for _, kv := range environ {
		if strings.HasPrefix(kv, "GIT_CONFIG_COUNT=") {
			continue
		}
		if !valid && (strings.HasPrefix(kv, "GIT_CONFIG_KEY_") || strings.HasPrefix(kv, "GIT_CONFIG_VALUE_")) {
			continue
		}
		out = append(out, kv)
	}
	if !valid {
		count = 0
	}
	for _, c := range commandConfig {
		n := strconv.Itoa(count)
		out = append(out, "GIT_CONFIG_KEY_"+n+"="+c[0], "GIT_CONFIG_VALUE_"+n+"="+c[1])
		count++
	}
	return append(out, "GIT_CONFIG_COUNT="+strconv.Itoa(count))
}
