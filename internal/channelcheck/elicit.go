package channelcheck

import (
	"encoding/json"
	"sort"
	"strings"
	"unicode"

	"github.com/mcpgate/mcpgate/engine"
)

// Elicitation checks the params of an elicitation/create request (MCP 2025-11-25,
// Elicitation): a form (mode "form" or absent) whose requestedSchema has a field
// asking for a credential, or whose message asks for one beside a free-text field,
// is elicitation_credential_request; a URL-mode request (mode "url") whose url is
// not https, or goes to a private or look-alike host, gets the matching
// elicitation_url_* finding. All High: the request is refused (the specification
// says servers MUST NOT ask for sensitive information in a form). A form asking for
// a standing broad grant is elicitation_standing_grant, Medium (standingGrant). Params that are
// not an object give no finding (the pipeline's fail mode covers them).
func Elicitation(params json.RawMessage) []engine.Finding {
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil {
		return nil
	}
	var mode, message string
	_ = json.Unmarshal(p["mode"], &mode)
	_ = json.Unmarshal(p["message"], &message)
	if mode == "url" {
		var u string
		_ = json.Unmarshal(p["url"], &u)
		if rule := URLRule(u); rule != "" {
			return []engine.Finding{finding(rule, engine.SeverityHigh, "/url")}
		}
		return nil
	}
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(p["requestedSchema"], &schema)
	keys := make([]string, 0, len(schema.Properties))
	for k := range schema.Properties {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []engine.Finding
	freeText := false
	for _, k := range keys {
		var f struct {
			Type        string            `json:"type"`
			Title       string            `json:"title"`
			Enum        []json.RawMessage `json:"enum"`
			OneOf       []json.RawMessage `json:"oneOf"`
			AnyOf       []json.RawMessage `json:"anyOf"`
			Items       json.RawMessage   `json:"items"`
			Description string            `json:"description"`
		}
		_ = json.Unmarshal(schema.Properties[k], &f)
		switch f.Type {
		case "boolean":
			continue // a yes or no carries no credential
		case "", "string", "number", "integer":
		default:
			continue // arrays of enums (multi-select) and other types
		}
		if len(f.Enum) > 0 || len(f.OneOf) > 0 || len(f.AnyOf) > 0 {
			continue // the user picks one of the server's own values
		}
		freeText = true
		if AsksCredential(k) || AsksCredential(f.Title) || AsksIdentityNumber(k) || AsksIdentityNumber(f.Title) {
			out = append(out, finding(RuleElicitationCredential, engine.SeverityHigh, "/requestedSchema/properties/"+escapePointer(k)))
		}
	}
	if len(out) == 0 && freeText && messageAsksCredential(message) {
		out = append(out, finding(RuleElicitationCredential, engine.SeverityHigh, "/message"))
	}
	return append(out, standingGrantFinding(message, p["requestedSchema"])...)
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// words splits a field name or title into lower-case words at spaces, punctuation,
// '_' and '-', letter/digit changes and lower-to-upper changes ("apiKey",
// "card_number", "Personal access token").
func words(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	var prev rune
	for _, r := range s {
		switch {
		case unicode.IsLetter(r):
			if len(cur) > 0 && (unicode.IsUpper(r) && unicode.IsLower(prev) || unicode.IsDigit(prev)) {
				flush()
			}
			cur = append(cur, r)
		case unicode.IsDigit(r):
			if len(cur) > 0 && !unicode.IsDigit(prev) && !(prev == 'v' || prev == 'V') {
				flush()
			}
			cur = append(cur, r)
		default:
			flush()
		}
		prev = r
	}
	flush()
	return out
}

// credentialWords are words that name a credential on their own; credentialJoined
// the same written as one word; notCredentialAfter the words after "password" or
// "token" that make it about the credential rather than the credential itself.
var (
	credentialWords = map[string]bool{
		"password": true, "passwd": true, "passphrase": true, "passcode": true, "pwd": true,
		"secret": true, "credential": true, "credentials": true, "cvv": true, "cvv2": true, "cvc": true, "cvc2": true,
		"otp": true, "totp": true, "pin": true,
	}
	credentialJoined = map[string]bool{
		"apikey": true, "apitoken": true, "accesstoken": true, "authtoken": true, "refreshtoken": true,
		"bearertoken": true, "sessiontoken": true, "idtoken": true, "privatekey": true, "secretkey": true,
		"accesskey": true, "cardnumber": true, "ccnumber": true, "creditcard": true, "clientsecret": true,
		"signingkey": true, "encryptionkey": true, "mfacode": true, "twofactorcode": true,
	}
	keyOwners      = map[string]bool{"api": true, "private": true, "secret": true, "access": true, "signing": true, "encryption": true, "master": true}
	cardWords      = map[string]bool{"number": true, "num": true, "no": true, "nr": true}
	notCredAfter   = map[string]bool{"hint": true, "policy": true, "strength": true, "length": true, "rules": true, "reset": true, "expiry": true, "expires": true, "age": true, "changed": true, "manager": true, "protected": true, "count": true, "limit": true, "limits": true, "budget": true, "usage": true, "type": true, "estimate": true, "required": true}
	notTokenBefore = map[string]bool{"max": true, "min": true, "maximum": true, "minimum": true, "total": true, "output": true, "input": true, "prompt": true, "completion": true, "context": true}
)

// Credentials named in other languages than English (docs/channels.md#structure):
// intlCredentialWords name one on their own; intlKeyWords are "key" and "token",
// a credential next to an owner ("clave de API", "API-Schlüssel", "jeton d'accès");
// intlCredentialPhrases are several words ("mot de passe", "número de tarjeta");
// intlCredentialRunes are written without spaces (Chinese, Japanese, Korean).
var (
	intlCredentialWords = map[string]bool{
		"contraseña": true, "contrasena": true, "senha": true, "passwort": true, "kennwort": true, "wachtwoord": true,
		"hasło": true, "haslo": true, "şifre": true, "sifre": true, "пароль": true, "heslo": true,
		"salasana": true, "lösenord": true, "losenord": true, "passord": true, "adgangskode": true, "adgangsord": true,
		"jelszó": true, "jelszo": true, "parolă": true, "wachtwoorden": true, "contraseñas": true, "senhas": true,
		"zugangsdaten": true, "anmeldedaten": true, "kartennummer": true, "bestätigungscode": true, "sicherheitscode": true,
		"einmalpasswort": true, "einmalcode": true, "zugangstoken": true, "passwörter": true, "credenciales": true,
		"credenciais": true, "identifiants": true, "credenziali": true, "токен": true, "mdp": true, "пин": true,
	}
	intlKeyWords          = map[string]bool{"clave": true, "chave": true, "clé": true, "cle": true, "chiave": true, "schlüssel": true, "sleutel": true, "klucz": true, "ключ": true, "jeton": true, "llave": true, "nøkkel": true, "nyckel": true}
	intlKeyOwners         = map[string]bool{"api": true, "privada": true, "privée": true, "privee": true, "privata": true, "secreta": true, "secrète": true, "secrete": true, "segreta": true, "acceso": true, "accès": true, "acces": true, "acesso": true, "accesso": true, "geheimer": true, "privater": true, "zugriff": true, "ssh": true, "доступа": true}
	intlCredentialPhrases = []string{
		"mot de passe", "mots de passe", "numéro de carte", "numero de carte", "code de vérification", "code de sécurité", "code secret", "code pin",
		"número de tarjeta", "numero de tarjeta", "código de verificación", "codigo de verificacion", "código de seguridad", "palabra secreta",
		"número do cartão", "numero do cartao", "código de verificação", "codigo de verificacao", "código de segurança",
		"numero di carta", "numero della carta", "codice di verifica", "codice di sicurezza", "parola d'ordine", "parola chiave segreta",
		"номер карты", "код подтверждения", "секретный ключ",
	}
	intlCredentialRunes = []string{"密码", "密碼", "口令", "验证码", "驗證碼", "パスワード", "暗証番号", "認証コード", "秘密鍵", "비밀번호", "암호", "인증번호", "인증 코드", "カード番号", "卡号"}
	intlNotKeyBefore    = map[string]bool{"palabra": true, "palabras": true, "palavra": true, "palavras": true, "parola": true, "mot": true, "mots": true}
)

// asksCredentialIntl reports a credential named in another language than English
// (intlCredentialWords and kin).
func asksCredentialIntl(s string, w []string) bool {
	for i, x := range w {
		switch {
		case intlCredentialWords[x]:
			return true
		case intlKeyWords[x]:
			prev, next := "", ""
			if i > 0 {
				prev = w[i-1]
			}
			if i+1 < len(w) {
				next = w[i+1]
			}
			if intlNotKeyBefore[prev] {
				continue // "palabra clave": a keyword
			}
			if intlKeyOwners[next] || intlKeyOwners[prev] || x == "jeton" || x == "clave" && i == len(w)-1 && len(w) <= 2 {
				return true
			}
			if i+2 < len(w) && intlKeyOwners[w[i+2]] && (next == "de" || next == "d" || next == "di" || next == "da" || next == "do") {
				return true // "clave de API", "chiave di accesso"
			}
		}
	}
	if len(w) > 1 {
		j := " " + strings.Join(w, " ") + " "
		for _, p := range intlCredentialPhrases {
			if strings.Contains(j, " "+strings.ReplaceAll(p, "'", " ")+" ") {
				return true
			}
		}
	}
	for _, r := range intlCredentialRunes {
		if strings.Contains(s, r) {
			return true
		}
	}
	return false
}

// AsksCredential reports whether a form field's name or title asks for a credential:
// a password (not a password hint or policy), a token (not a token count or max
// tokens), an API, private, secret or access key, a secret, a card number or CVV, a
// one-time code or PIN, a seed or recovery phrase or recovery codes; in English or in another language (asksCredentialIntl:
// "Contraseña", "mot de passe", "API-Schlüssel", "密码").
func AsksCredential(s string) bool {
	w := words(s)
	if asksCredentialIntl(s, w) {
		return true
	}
	for i, x := range w {
		next, prev := "", ""
		if i+1 < len(w) {
			next = w[i+1]
		}
		if i > 0 {
			prev = w[i-1]
		}
		switch {
		case credentialWords[x] || credentialJoined[x]:
			if !notCredAfter[next] {
				return true
			}
		case x == "token":
			if !notCredAfter[next] && !notTokenBefore[prev] {
				return true
			}
		case x == "key" && keyOwners[prev]:
			if !notCredAfter[next] {
				return true
			}
		case x == "card" && (cardWords[next] || prev == "credit" || prev == "debit") && !notCredAfter[next]:
			return true
		case x == "security" && next == "code", x == "verification" && next == "code", x == "one" && next == "time":
			return true
		case (x == "seed" || x == "recovery" || x == "mnemonic" || x == "backup") && (next == "phrase" || next == "phrases" || next == "words" || next == "codes" || next == "code"):
			// a wallet's seed or recovery phrase, an account's recovery codes: whoever
			// holds them holds the account
			if i+2 >= len(w) || !notCredAfter[w[i+2]] {
				return true
			}
		case x == "mnemonic" && next == "": // "phrase" is the case above
			return true
		}
	}
	return false
}

// askVerbs are the words with which a message asks the user to hand something over.
var askVerbs = map[string]bool{"paste": true, "enter": true, "provide": true, "type": true, "give": true, "share": true,
	"send": true, "input": true, "submit": true, "supply": true, "confirm": true,
	// es, pt, fr, de, it, nl, pl, ru
	"introduzca": true, "introduce": true, "ingrese": true, "ingresa": true, "escriba": true, "escribe": true, "proporcione": true,
	"proporciona": true, "pegue": true, "pega": true, "indique": true, "facilite": true, "digite": true, "insira": true, "informe": true,
	"forneça": true, "cole": true, "entrez": true, "saisissez": true, "saisir": true, "fournissez": true, "collez": true, "indiquez": true,
	"renseignez": true, "geben": true, "eingeben": true, "einfügen": true, "angeben": true, "inserisci": true, "inserire": true,
	"inserisca": true, "digita": true, "fornisci": true, "incolla": true, "voer": true, "vul": true, "plak": true, "wpisz": true,
	"podaj": true, "введите": true, "укажите": true, "вставьте": true}

// messageAsksCredential reports whether a form's message asks the user to hand over a
// credential or an identity number: an asking verb followed, within eight words, by one.
func messageAsksCredential(msg string) bool {
	w := words(msg)
	for i, x := range w {
		if !askVerbs[x] {
			continue
		}
		end := min(len(w), i+9)
		if next := strings.Join(w[i+1:end], " "); AsksCredential(next) || AsksIdentityNumber(next) {
			return true
		}
	}
	return false
}

// Identity numbers a form must not ask for either (MCP 2025-11-25, Elicitation:
// "sensitive information"): idWords name one on their own, idPairs are two words
// ("social security", "passport number"); the number after them is optional where
// the pair says it ("tax id").
var (
	idWords = map[string]bool{"ssn": true, "ssns": true, "itin": true, "nino": true, "aadhaar": true, "cpf": true, "dni": true, "iban": true,
		"steuernummer": true, "steueridentifikationsnummer": true, "personalausweisnummer": true, "sozialversicherungsnummer": true,
		"passnummer": true, "ausweisnummer": true}
	idPairs = map[[2]string]bool{
		{"social", "security"}: true, {"social", "insurance"}: true, {"national", "id"}: true, {"national", "identity"}: true,
		{"national", "insurance"}: true, {"national", "identification"}: true, {"passport", "number"}: true, {"passport", "no"}: true,
		{"passport", "nr"}: true, {"tax", "id"}: true, {"tax", "identification"}: true, {"taxpayer", "id"}: true,
		{"taxpayer", "identification"}: true, {"license", "number"}: true, {"licence", "number"}: true, {"routing", "number"}: true,
		{"account", "number"}: true, {"codice", "fiscale"}: true, {"securite", "sociale"}: true, {"sécurité", "sociale"}: true,
		{"seguro", "social"}: true, {"seguridad", "social"}: true, {"segurança", "social"}: true, {"seguranca", "social"}: true,
		{"id", "card"}: true, {"identity", "card"}: true,
	}
	// idPairLead: the word that must come before a pair that is ambiguous alone (a
	// driver's licence number, a bank account number)
	idPairLead = map[string]map[string]bool{
		"license": {"driver": true, "drivers": true, "driving": true, "s": true}, "licence": {"driver": true, "drivers": true, "driving": true, "s": true},
		"account": {"bank": true, "checking": true, "savings": true}, "id": {"national": true, "government": true, "photo": true},
		"identity": {"national": true, "government": true},
	}
	// idNotAfter: a pair followed by one of these names something about the number
	idNotAfter = map[string]bool{"format": true, "policy": true, "rules": true, "type": true, "country": true, "required": true, "length": true,
		"office": true, "benefits": true, "administration": true, "rate": true, "rates": true, "year": true,
		"status": true, "category": true, "letter": true, "class": true}
)

// AsksIdentityNumber reports whether a form field's name or title, or the words
// after an asking verb, ask for a national identity or financial account number: an
// SSN, a social security or insurance number, a national id, a passport or tax id, a
// driver's licence number, a bank account or routing number, an IBAN ("ssn",
// "passport_number", "Numéro de sécurité sociale"). "Tax rate" and "Passport
// country" do not.
func AsksIdentityNumber(s string) bool {
	w := words(s)
	for i, x := range w {
		next := ""
		if i+1 < len(w) {
			next = w[i+1]
		}
		if idWords[x] && !idNotAfter[next] {
			return true
		}
		if !idPairs[[2]string{x, next}] {
			continue
		}
		if lead, ok := idPairLead[x]; ok && (i == 0 || !lead[w[i-1]]) {
			continue
		}
		if i+2 < len(w) && idNotAfter[w[i+2]] {
			continue
		}
		return true
	}
	return false
}
