package config

import (
	"fmt"
	"strconv"
)

// maxTopicLen is Kafka's limit on topic names.
const maxTopicLen = 249

// topicRole is what the worker does with a topic.
type topicRole int

const (
	roleRead     topicRole = iota // input and reward topics
	roleOutput                    // topics.output
	roleRejected                  // topics.rejected
	roleInternal                  // dead-letter, stats, caps, control
	roleVariant                   // an experiment variant's topic
)

// clash reports whether one topic may not serve both roles: nothing shares
// a topic with an input or internal topic, and rejected events share one
// with no passed events; variants may write to the output topic or to one
// another's topics.
func clash(a, b topicRole) bool {
	switch {
	case a == roleRead || b == roleRead, a == roleInternal || b == roleInternal:
		return true
	case a == roleRejected || b == roleRejected:
		return true
	}
	return false
}

type topicUse struct {
	path string
	role topicRole
}

func (v *checker) topics(c *Config) {
	t := c.Topics
	var uses []topicUse
	var names []string
	use := func(path, name string, role topicRole, required bool) {
		if name == "" {
			if required {
				v.add(path, "must name a topic")
			}
			return
		}
		if reason := topicNameProblem(name); reason != "" {
			v.add(path, reason)
			return
		}
		uses = append(uses, topicUse{path, role})
		names = append(names, name)
	}
	if len(t.Input) == 0 {
		v.add("topics.input", "must list at least one topic")
	}
	for i, name := range t.Input {
		use("topics.input["+strconv.Itoa(i)+"]", name, roleRead, true)
	}
	for i, name := range t.Rewards {
		use("topics.rewards["+strconv.Itoa(i)+"]", name, roleRead, true)
	}
	use("topics.output", t.Output, roleOutput, true)
	use("topics.rejected", t.Rejected, roleRejected, false)
	use("topics.dead_letter", t.DeadLetter, roleInternal, true)
	use("topics.stats", t.Stats, roleInternal, true)
	use("topics.caps", t.Caps, roleInternal, len(c.Caps) > 0)
	use("topics.control", t.Control, roleInternal, false)
	for i, l := range c.Layers {
		for j, e := range l.Experiments {
			for k, vr := range e.Variants {
				// splitter.Validate reports an empty topic.
				if vr.Topic != "" {
					use(fmt.Sprintf("layers[%d].experiments[%d].variants[%d].topic", i, j, k), vr.Topic, roleVariant, false)
				}
			}
		}
	}
	if t.Partitions < 0 {
		v.add("topics.partitions", fmt.Sprintf("must be at least 0 (0: as many as the input), got %d", t.Partitions))
	}

	// Each clash is reported once, on the later use, naming the first.
	for b := range uses {
		for a := range b {
			if names[a] == names[b] && clash(uses[a].role, uses[b].role) {
				v.add(uses[b].path, fmt.Sprintf("topic %q is also %s", names[b], uses[a].path))
				break
			}
		}
	}
}

// topicNameProblem returns why name is not a legal Kafka topic name, or "".
func topicNameProblem(name string) string {
	if len(name) > maxTopicLen {
		return fmt.Sprintf("topic name is %d characters long, more than Kafka's %d", len(name), maxTopicLen)
	}
	if name == "." || name == ".." {
		return fmt.Sprintf("topic name %q is not allowed by Kafka", name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Sprintf("topic name %q may only contain ASCII letters, digits, '.', '_' and '-'", name)
		}
	}
	return ""
}
