package validate

import (
	"strconv"
	"strings"
	"time"
)

// Cited is what every row of a table (a run, a memory case, a serving
// row) starts with: its id, unique in its table, and where it was
// published. parseTable checks both for every row.
type Cited struct {
	ID     string `yaml:"id" json:"id"`
	Source Source `yaml:"source" json:"source"`
}

// cited is the row's id and source, for parseTable.
func (c *Cited) cited() *Cited { return c }

// Source says where a row of a table (a run, a memory case, a serving
// figure, a batch verdict) was published: a file (Path) or an issue or
// pull request (Issue) of Repo, at Commit where known, or a web page
// (URL); and, where the row's configuration is read elsewhere, that file
// (ConfigPath at ConfigCommit).
type Source struct {
	Repo         string `yaml:"repo,omitempty" json:"repo,omitempty"`
	Path         string `yaml:"path,omitempty" json:"path,omitempty"`
	Issue        string `yaml:"issue,omitempty" json:"issue,omitempty"`
	Commit       string `yaml:"commit,omitempty" json:"commit,omitempty"`
	URL          string `yaml:"url,omitempty" json:"url,omitempty"`
	ConfigPath   string `yaml:"config_path,omitempty" json:"config_path,omitempty"`
	ConfigCommit string `yaml:"config_commit,omitempty" json:"config_commit,omitempty"`
}

// check validates a source once it is decoded: a repo with a path or an
// issue in it, or an https:// page; commits as git spells them.
func (s Source) check() error {
	switch {
	case s.Repo == "" && s.URL == "":
		return bad("source", "no repo or url", "a repo (owner/name) or a url")
	case s.Repo != "" && (strings.Count(s.Repo, "/") != 1 || strings.ContainsAny(s.Repo, " \t\n")):
		return bad("source.repo", strconv.Quote(s.Repo), "owner/name")
	case s.Repo != "" && strings.TrimSpace(s.Path) == "" && strings.TrimSpace(s.Issue) == "":
		return bad("source", "no path or issue", "a path or an issue of the repo")
	case s.Commit != "" && !hexCommit.MatchString(s.Commit):
		return bad("source.commit", strconv.Quote(s.Commit), "7 to 40 lower-case hex digits")
	case s.ConfigCommit != "" && !hexCommit.MatchString(s.ConfigCommit):
		return bad("source.config_commit", strconv.Quote(s.ConfigCommit), "7 to 40 lower-case hex digits")
	case s.URL != "" && !strings.HasPrefix(s.URL, "https://"):
		return bad("source.url", strconv.Quote(s.URL), "an https:// address")
	}
	return nil
}

// checkDate checks the date a row's source was published (its date
// field): a day, YYYY-MM-DD, or a month, YYYY-MM, where the source gives
// no day.
func checkDate(date string) error {
	if _, err := time.Parse("2006-01-02", date); err == nil {
		return nil
	}
	if _, err := time.Parse("2006-01", date); err == nil {
		return nil
	}
	return bad("date", strconv.Quote(date), "YYYY-MM-DD or YYYY-MM")
}

// String is where s was published, as one line: repo/path@commit (or
// repo#issue), or the page.
func (s Source) String() string {
	if s.Repo == "" {
		return s.URL
	}
	at := s.Repo + "/" + s.Path
	if s.Path == "" {
		at = s.Repo + "#" + s.Issue
	}
	if s.Commit != "" {
		at += "@" + s.Commit[:min(len(s.Commit), 8)]
	}
	return at
}
