package initcfg

import (
	"fmt"
	"strings"
)

// Role is what a path is proposed for: the config's fields section.
type Role string

// Roles, in the order of the config's fields.
const (
	RoleBudget Role = "budget"
	RoleKey    Role = "key"
	RoleID     Role = "id"
	RoleScore  Role = "score"
	RoleTime   Role = "time"
)

// Roles are every role, in the order of the config.
var Roles = []Role{RoleBudget, RoleKey, RoleID, RoleScore, RoleTime}

// Proposal is the path proposed for a role ("" for none) and why.
type Proposal struct {
	Role   Role   `json:"role"`
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// names are the words of field names that suggest a role: an exact name
// counts more than a name containing the word.
var names = map[Role][]string{
	RoleBudget: {"campaign", "budget", "tenant", "account", "advertiser", "lineitem", "offer", "placement", "plan", "customer", "client", "app", "product", "partner", "publisher"},
	RoleKey:    {"user", "userid", "uid", "customer", "visitor", "device", "member", "player", "session", "subscriber", "account", "profile"},
	RoleID:     {"id", "eventid", "uuid", "guid", "messageid", "msgid", "requestid", "eventuuid", "impressionid", "txid"},
	RoleScore:  {"score", "bid", "price", "value", "priority", "weight", "rank", "probability", "prob", "relevance", "amount", "revenue", "ecpm", "cpm"},
	RoleTime:   {"ts", "time", "timestamp", "eventtime", "createdat", "occurredat", "at", "date", "datetime", "when"},
}

// nameScore is how much the last segment of path sounds like role: 2 for
// one of its words exactly (case, '_' and '-' ignored), 1 for a name that
// contains one (of four letters or more), else 0.
func nameScore(path string, role Role) float64 {
	seg := path[strings.LastIndexByte(path, '.')+1:]
	seg = strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(seg))
	best := 0.0
	for _, w := range names[role] {
		switch {
		case seg == w:
			return 2
		case len(w) >= 4 && strings.Contains(seg, w):
			best = 1
		}
	}
	return best
}

// enough is the share of the events a path must hold a value in to take
// a role: a field that is often missing would send events to the
// dead-letter topic.
const enough = 0.9

// fits returns how well the path's values fit role (0: they do not) and
// what in them says so. n is the number of events.
func fits(s *PathStats, role Role, n int) (float64, string) {
	if n == 0 || float64(s.Present) < enough*float64(n) {
		return 0, ""
	}
	timeLike := float64(s.Times()+s.Seconds) >= enough*float64(s.Present)
	switch role {
	case RoleBudget: // a string naming one of few values
		if s.Strings != s.Present || s.Distinct > max(1, n/2) {
			return 0, ""
		}
		return 1 + 1 - float64(s.Distinct)/float64(n), fmt.Sprintf("strings, %d distinct in %d events", s.Distinct, n)
	case RoleKey: // a string or an integer that repeats, or the record key
		if s.Strings+s.Numbers != s.Present || s.Numbers > 0 && !s.Integers || timeLike || s.Distinct < 2 {
			return 0, ""
		}
		score, why := 0.5, fmt.Sprintf("%d distinct values in %d events", s.Distinct, n)
		if s.KeyMatches >= s.Present*9/10 {
			score += 3
			why = "the record key in " + percent(s.KeyMatches, n) + " of events, " + why
		}
		if s.Distinct < s.Present {
			score += 0.5
		}
		return score, why
	case RoleID: // unique strings or integers
		if s.Strings+s.Numbers != s.Present || s.Numbers > 0 && !s.Integers || timeLike || s.Distinct != s.Present || n < 2 {
			return 0, ""
		}
		return 2, fmt.Sprintf("unique in every one of %d events", n)
	case RoleScore: // numbers at least 0, not times
		if s.Numbers != s.Present || s.Min < 0 || timeLike || s.Distinct < 2 {
			return 0, ""
		}
		score := 1.0
		if !s.Integers {
			score++
		}
		return score, fmt.Sprintf("numbers from %s to %s", num(s.Min), num(s.Max))
	case RoleTime: // times near now the worker reads right
		if float64(s.Times()) < enough*float64(s.Present) {
			return 0, ""
		}
		what := "Unix milliseconds"
		if s.RFC3339 > s.Millis {
			what = "RFC 3339 times"
		}
		return 3, fmt.Sprintf("%s from %s to %s", what, s.First.UTC().Format("2006-01-02T15:04:05Z"), s.Last.UTC().Format("2006-01-02T15:04:05Z"))
	}
	return 0, ""
}

// propose assigns paths to roles: every (role, path) pair is scored by
// the values (fits) and the name (nameScore), and the best pair is taken
// first, then the best of the rest, so that a path takes one role at most.
// A role no path fits gets "" with the reason.
func propose(stats []*PathStats, n int) map[Role]Proposal {
	type cand struct {
		role  Role
		s     *PathStats
		score float64
		why   string
	}
	var cands []cand
	for _, s := range stats {
		for _, r := range Roles {
			if f, why := fits(s, r, n); f > 0 {
				ns := nameScore(s.Path, r)
				if ns > 0 {
					why += "; its name suggests the " + string(r)
				}
				cands = append(cands, cand{r, s, f + ns, why})
			}
		}
	}
	out := map[Role]Proposal{}
	taken := map[string]bool{}
	for len(out) < len(Roles) {
		best := -1
		for i, c := range cands {
			if _, done := out[c.role]; done || taken[c.s.Path] {
				continue
			}
			if best < 0 || c.score > cands[best].score {
				best = i
			}
		}
		if best < 0 {
			break
		}
		c := cands[best]
		out[c.role] = Proposal{Role: c.role, Path: c.s.Path, Reason: c.why}
		taken[c.s.Path] = true
	}
	for _, r := range Roles {
		if _, ok := out[r]; !ok {
			out[r] = Proposal{Role: r, Reason: noFit[r]}
		}
	}
	return out
}

// noFit says what an empty path means for each role.
var noFit = map[Role]string{
	RoleBudget: "no field holds a string naming few values in nearly every event",
	RoleKey:    "no field repeats like a user id: the record key is used",
	RoleID:     "no field is unique in every event: events have no id (no deduplication)",
	RoleScore:  "no field holds numbers at least 0 in nearly every event: events are not scored",
	RoleTime:   "no field holds times near now in Unix milliseconds or RFC 3339: the record timestamp is used",
}

func percent(part, whole int) string {
	if whole == 0 {
		return "0%"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(part)/float64(whole))
}

func num(x float64) string { return fmt.Sprintf("%.4g", x) }
