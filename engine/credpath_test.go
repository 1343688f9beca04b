package engine

import "testing"

func TestCredentialPath(t *testing.T) {
	for s, want := range map[string]bool{
		"~/.ssh/id_rsa":                    true,
		"./.env":                           true,
		".env":                             true,
		"/srv/app/.env.production":         true,
		"C:\\Users\\me\\.aws\\credentials": true,
		"file:///home/me/.netrc":           true,
		"/home/me/.docker/config.json":     true,
		"certs/server.key":                 true,
		"/run/secrets/db_password":         true,
		"./README.md":                      false,
		"./notes.md":                       false,
		"/srv/app/.environment.md":         false,
		"src/keyboard.ts":                  false,
		"how do I rotate ~/.ssh/id_rsa":    false, // prose, not a path
		"":                                 false,
	} {
		if got := CredentialPath(s); got != want {
			t.Errorf("CredentialPath(%q) = %v, want %v", s, got, want)
		}
	}
}
