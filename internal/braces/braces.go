// Package braces reads and writes the markup of shardlab's notes: a text
// names a field of a request (an option, by its JSON key) as {key}, which
// each front end spells its own way (the CLI as its flag, a web form as
// its label), and braces of the text's own are doubled, {{ and }}. plan's
// notes and errors and inference's plans are written in it; both spell
// them with Spell.
package braces

import "strings"

// Spell is t with each {key} that known accepts written as name(key), and
// its doubled braces undoubled. A key is what stands between a { and the
// first } after it, and is never empty; known nil accepts every key. A
// brace that starts no doubled pair and no accepted {key} is kept as it
// is. Read left to right, a doubled brace before a key: {{key} is
// {key's name.
func Spell(t string, name func(key string) string, known func(key string) bool) string {
	if !strings.ContainsAny(t, "{}") {
		return t
	}
	var b strings.Builder
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case (c == '{' || c == '}') && i+1 < len(t) && t[i+1] == c:
			i++
		case c == '{':
			if j := strings.IndexByte(t[i:], '}'); j > 1 && (known == nil || known(t[i+1:i+j])) {
				b.WriteString(name(t[i+1 : i+j]))
				i += j
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// Literal is s with its braces doubled: text from outside (a value, a
// path, a name) as a note holds it, so that Spell reads none of its
// braces as a key and gives s back.
func Literal(s string) string { return doubled.Replace(s) }

var doubled = strings.NewReplacer("{", "{{", "}", "}}")
