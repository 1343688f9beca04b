package channelcheck

import (
	"encoding/json"
	"slices"
)

// AuthorizedTool returns the index of the first listed tool whose definition says an
// authorization decides who gets it, or -1 (docs/decisions.md#cache-hints): a name
// with an administrator's word (admin, superuser, sudo, privileged, impersonate, as
// a word: "admin_delete_tenant", "sudoExec"), a name that grants or revokes a role,
// permission, privilege or access ("grant_role", "revokeAccess"), or a securitySchemes
// entry other than "noauth". tools is a listing's "tools" array; anything else is -1.
// A listing holding such a tool is one a server may show some callers only, so a
// shared cache must not hand it to others.
func AuthorizedTool(tools json.RawMessage) int {
	var list []struct {
		Name            string `json:"name"`
		SecuritySchemes []struct {
			Type string `json:"type"`
		} `json:"securitySchemes"`
	}
	if json.Unmarshal(tools, &list) != nil {
		return -1
	}
	for i, t := range list {
		if authorizedName(words(t.Name)) {
			return i
		}
		for _, s := range t.SecuritySchemes {
			if s.Type != "" && s.Type != "noauth" {
				return i
			}
		}
	}
	return -1
}

var (
	adminWords     = []string{"admin", "administrator", "administration", "superuser", "sudo", "privileged", "impersonate", "impersonation"}
	grantVerbs     = []string{"grant", "revoke", "elevate", "escalate"}
	authorityNouns = []string{"role", "roles", "permission", "permissions", "privilege", "privileges", "access", "admin"}
)

func authorizedName(ws []string) bool {
	for i, w := range ws {
		if slices.Contains(adminWords, w) {
			return true
		}
		if slices.Contains(grantVerbs, w) {
			for _, n := range ws[i+1 : min(len(ws), i+3)] {
				if slices.Contains(authorityNouns, n) {
					return true
				}
			}
		}
	}
	return false
}
