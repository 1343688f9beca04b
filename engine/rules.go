package engine

// Rule ids. The six output_* ids of docs/decisions.md#rule-set keep their names and
// severities; the others are mcpgate additions (docs/engine.md).
const (
	RuleOSC52Clipboard    = "output_osc52_clipboard_write"
	RuleHyperlinkMismatch = "output_terminal_hyperlink_mismatch"
	RuleHiddenText        = "output_hidden_text"
	RuleFakePrompt        = "output_fake_prompt"
	RuleTitleManipulation = "output_title_manipulation"
	RuleClearScreen       = "output_clear_screen"
	RuleCursorOverwrite   = "output_cursor_overwrite"
	RuleTerminalControl   = "output_terminal_control"
	RulePromptInjection   = "output_prompt_injection"
	RuleEmail             = "pii_email"
	RulePhone             = "pii_phone"
	RulePaymentCard       = "pii_payment_card"
	RuleIBAN              = "pii_iban"
	RuleUSSSN             = "pii_us_ssn"
	RuleIPAddress         = "pii_ip_address"
	RuleAWSAccessKey      = "secret_aws_access_key"
	RuleGitHubToken       = "secret_github_token"
	RuleSlackToken        = "secret_slack_token"
	RuleStripeKey         = "secret_stripe_key"
	RuleGoogleAPIKey      = "secret_google_api_key"
	RuleJWT               = "secret_jwt"
	RulePrivateKey        = "secret_private_key"

	RuleTerminalInputMode = "output_terminal_input_mode"
	RuleAnthropicKey      = "secret_anthropic_api_key"
	RuleOpenAIKey         = "secret_openai_api_key"
	RuleAIProviderKey     = "secret_ai_provider_key"
	RuleGitLabToken       = "secret_gitlab_token"
	RuleNPMToken          = "secret_npm_token"
	RulePyPIToken         = "secret_pypi_token"
	RuleChatWebhook       = "secret_chat_webhook"
	RuleAWSSecretKey      = "secret_aws_secret_access_key"
	RuleHTTPAuthorization = "secret_http_authorization"
	RuleHTTPCookie        = "secret_http_cookie"
	RuleURLPassword       = "secret_url_password"

	RuleShellIntegration  = "output_terminal_shell_integration"
	RuleHyperlinkScheme   = "output_terminal_hyperlink_scheme"
	RuleExfilURL          = "output_exfil_url"
	RuleHiddenInstruction = "output_hidden_instructions"
	RuleSSRFTarget        = "output_ssrf_target"
	RuleInjectedOrders    = "output_injected_instructions"
	RuleCredentialRequest = "output_credential_request"
	RuleGoogleOAuth       = "secret_google_oauth_token"
	RuleTelegramBot       = "secret_telegram_bot_token"
	RuleSupabaseKey       = "secret_supabase_key"
	RuleStripeWebhook     = "secret_stripe_webhook_secret"
	RuleCloudflareToken   = "secret_cloudflare_api_token"

	RuleDirectiveToModel = "output_directive_to_model"
	RuleSecrecyOrder     = "output_secrecy_order"
	RulePromptRequest    = "output_system_prompt_request"
	RuleEscalatingError  = "output_escalating_error"
	RuleEncodedOrders    = "output_encoded_orders"
	RuleToolTransfer     = "output_tool_transfer"
)

// Rule families, as reported in Rule.Family.
const (
	FamilyTerminalEscape  = "terminal_escape"
	FamilyHiddenText      = "hidden_text"
	FamilyPromptInjection = "prompt_injection"
	FamilyPII             = "pii"
	FamilySecret          = "secret"
	FamilyExfiltration    = "exfiltration"
	FamilyUnsafeTarget    = "unsafe_target"
)

// Rule describes one built-in rule: a stable snake_case id, its family, its default
// severity and a one-line explanation.
type Rule struct {
	ID       string   `json:"id"`
	Family   string   `json:"family"`
	Severity Severity `json:"severity"`
	Summary  string   `json:"summary"`
}

// ruleIndex is a dense index into the rule table; findings carry it internally so
// severity lookups need no map.
type ruleIndex uint16

const (
	rOSC52 ruleIndex = iota
	rHyperlink
	rHidden
	rFakePrompt
	rTitle
	rClear
	rOverwrite
	rControl
	rInjection
	rEmail
	rPhone
	rCard
	rIBAN
	rSSN
	rIP
	rAWS
	rGitHub
	rSlack
	rStripe
	rGoogle
	rJWT
	rPrivateKey
	rInputMode
	rAnthropic
	rOpenAI
	rAIProvider
	rGitLab
	rNPM
	rPyPI
	rWebhook
	rAWSSecret
	rAuthorization
	rCookie
	rURLPassword
	rShellIntegration
	rLinkScheme
	rExfil
	rHiddenOrders
	rSSRF
	rInjectedOrders
	rGoogleOAuth
	rTelegram
	rSupabase
	rStripeWebhook
	rCloudflare
	rDirective
	rSecrecy
	rPromptRequest
	rEscalation
	rEncodedOrders
	rCredRequest
	rToolTransfer
	numRules // built-in rules; the catalogue's follow (catalogue.go)
)

// ruleTable is every rule, indexed by ruleIndex: the built-in ones, then the
// catalogue's (catalogue.go).
var ruleTable = append(builtinRules[:], catalogueRuleTable()...)

// builtinRules is the hand-written rule set, indexed by ruleIndex.
var builtinRules = [numRules]Rule{
	rOSC52:      {RuleOSC52Clipboard, FamilyTerminalEscape, SeverityHigh, "OSC 52 (or kitty OSC 5522 / iTerm2 OSC 1337 Copy=) writes or reads the terminal clipboard"},
	rHyperlink:  {RuleHyperlinkMismatch, FamilyTerminalEscape, SeverityHigh, "OSC 8 hyperlink whose visible label names a host other than the link target's"},
	rHidden:     {RuleHiddenText, FamilyHiddenText, SeverityMedium, "text a human cannot see but a model reads: SGR 8 conceal, foreground = background, zero-width runs, runs of other default-ignorable characters (soft hyphen, CGJ, Hangul fillers, Khmer and Mongolian), Unicode Tags, bidi controls, variation-selector runs"},
	rFakePrompt: {RuleFakePrompt, FamilyPromptInjection, SeverityMedium, "a line that is only a shell prompt of another (often root) session, e.g. \"[root@host ~]# \""},
	rTitle:      {RuleTitleManipulation, FamilyTerminalEscape, SeverityInfo, "OSC 0/1/2 sets the terminal window or icon title"},
	rClear:      {RuleClearScreen, FamilyTerminalEscape, SeverityInfo, "CSI 2J/3J, RIS (ESC c) or the alternate screen clears what the user saw"},
	rOverwrite:  {RuleCursorOverwrite, FamilyTerminalEscape, SeverityMedium, "bare CR, backspaces, cursor-up/position/restore or line erase that overwrite earlier prose with other text"},
	rControl:    {RuleTerminalControl, FamilyTerminalEscape, SeverityMedium, "DCS, APC, PM, SOS, stray C1 controls, unknown OSC, or CSI queries that make the terminal act or answer"},
	rInjection:  {RulePromptInjection, FamilyPromptInjection, SeverityMedium, "forged role or system markup (system-reminder tags, the pipe-delimited special tokens of ChatML, Llama, Harmony and DeepSeek, Gemma turn tags, Llama and Mistral INST and SYSTEM_PROMPT tags, Human and Assistant turns at line start; matched after NFKC) or forged fence sentinels"},
	rEmail:      {RuleEmail, FamilyPII, SeverityInfo, "e-mail address, whole: RFC 6531 local part (internationalized, apostrophes, quoted), dotted domain (IDN allowed) with an alphabetic TLD"},
	rPhone:      {RulePhone, FamilyPII, SeverityInfo, "phone number: E.164 (+ and 8-15 digits) or a national grouping (NANP 3-3-4, trunk-0 groups), with an attached extension (x12, ext.12)"},
	rCard:       {RulePaymentCard, FamilyPII, SeverityInfo, "payment card number: known IIN prefix and length, Luhn-valid, plain or grouped with spaces or dashes"},
	rIBAN:       {RuleIBAN, FamilyPII, SeverityInfo, "IBAN with the country's length and a valid mod-97 check, compact or in groups of 4 split by spaces or hyphens, any letter case"},
	rSSN:        {RuleUSSSN, FamilyPII, SeverityInfo, "US social security number AAA-GG-SSSS (or with spaces or dots) with valid area, group and serial"},
	rIP:         {RuleIPAddress, FamilyPII, SeverityInfo, "IPv4 dotted quad or IPv6 address, not code (a[::2], A::B()) and not a version (app_version, version 1.2.3.4)"},
	rAWS:        {RuleAWSAccessKey, FamilySecret, SeverityInfo, "AWS access key id (AKIA/ASIA + 16)"},
	rGitHub:     {RuleGitHubToken, FamilySecret, SeverityInfo, "GitHub token (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_)"},
	rSlack:      {RuleSlackToken, FamilySecret, SeverityInfo, "Slack token (xoxb-, xoxp-, xoxa-, xoxr-, xoxs-, xoxe-, xapp-)"},
	rStripe:     {RuleStripeKey, FamilySecret, SeverityInfo, "Stripe secret or restricted key (sk_live_, sk_test_, rk_live_, rk_test_)"},
	rGoogle:     {RuleGoogleAPIKey, FamilySecret, SeverityInfo, "Google API key (AIza + 35)"},
	rJWT:        {RuleJWT, FamilySecret, SeverityInfo, "JSON Web Token whose header decodes to a JSON object with \"alg\""},
	rPrivateKey: {RulePrivateKey, FamilySecret, SeverityInfo, "the whole PEM/OpenSSH/PGP private-key block, BEGIN line to END line"},

	rInputMode:     {RuleTerminalInputMode, FamilyTerminalEscape, SeverityMedium, "a mode that changes how the terminal takes input or where output goes: mouse or focus reporting (CSI ? 9/1000-1007/1015/1016 h), bracketed paste off (CSI ? 2004 l), KAM/SRM/LNM (CSI 2/12/20 h), key encodings (CSI > 4 ; n m, CSI > u), printer controller (CSI 5 i, CSI 4 i, CSI i), DECALN (ESC # 8)"},
	rAnthropic:     {RuleAnthropicKey, FamilySecret, SeverityInfo, "Anthropic API or admin key (sk-ant-api03-, sk-ant-admin01-)"},
	rOpenAI:        {RuleOpenAIKey, FamilySecret, SeverityInfo, "OpenAI project, service-account, admin or legacy key (sk-proj-, sk-svcacct-, sk-admin-, T3BlbkFJ marker)"},
	rAIProvider:    {RuleAIProviderKey, FamilySecret, SeverityInfo, "other AI-provider keys: Groq gsk_, xAI xai-, Hugging Face hf_/api_org_, Perplexity pplx-, Replicate r8_, OpenRouter sk-or-v1-, other sk- keys of 32+ random characters"},
	rGitLab:        {RuleGitLabToken, FamilySecret, SeverityInfo, "GitLab token (glpat-, gldt-, glrt-, glptt-, glcbt-, glft-, glimt-, glsoat-, glagent-, GR1348941)"},
	rNPM:           {RuleNPMToken, FamilySecret, SeverityInfo, "npm access token (npm_ + 36)"},
	rPyPI:          {RulePyPIToken, FamilySecret, SeverityInfo, "PyPI upload token (pypi-AgEIcHlwaS5vcmc...)"},
	rWebhook:       {RuleChatWebhook, FamilySecret, SeverityInfo, "chat incoming-webhook URL (Slack hooks.slack.com, Discord /api/webhooks/, Microsoft Teams webhook.office.com and Workflows, Google Chat, Mattermost/Rocket.Chat /hooks/)"},
	rAWSSecret:     {RuleAWSSecretKey, FamilySecret, SeverityInfo, "AWS secret access key: 40 base64 characters after aws_secret_access_key / SecretAccessKey"},
	rAuthorization: {RuleHTTPAuthorization, FamilySecret, SeverityInfo, "the credential after an Authorization or Proxy-Authorization header's Bearer, Basic or Token scheme"},
	rCookie:        {RuleHTTPCookie, FamilySecret, SeverityInfo, "a session value in a Cookie or Set-Cookie header"},
	rURLPassword:   {RuleURLPassword, FamilySecret, SeverityInfo, "the password in a URL's user-info: after the user name and a colon, before the at sign and the host"},

	rShellIntegration: {RuleShellIntegration, FamilyTerminalEscape, SeverityMedium, "shell-integration and working-directory reports that make the terminal or IDE believe another command or directory: OSC 633 E (command line) and P;Cwd=, OSC 7, OSC 1337 CurrentDir=, SetUserVar= and RemoteHost= (OSC 133 prompt marks are not reported)"},
	rLinkScheme:       {RuleHyperlinkScheme, FamilyTerminalEscape, SeverityHigh, "OSC 8 hyperlink to a scheme other than http, https or mailto (file:, smb:, javascript:, data:, ...), whatever its label"},
	rExfil:            {RuleExfilURL, FamilyExfiltration, SeverityMedium, "a URL a client renders or fetches carrying data out: a Markdown image (inline or reference-style) or HTML <img> whose query or path holds long, high-entropy or encoded values, a 1x1 beacon, or a link whose query or path carries such values"},
	rHiddenOrders:     {RuleHiddenInstruction, FamilyPromptInjection, SeverityMedium, "markup that renders invisibly (HTML comment, hidden attribute, display:none, visibility:hidden, zero font size) holding words aimed at the model or agent"},
	rSSRF:             {RuleSSRFTarget, FamilyUnsafeTarget, SeverityMedium, "a resource_link, OSC 8 or Markdown link to a target an agent must not fetch: cloud metadata endpoints, loopback, private and link-local addresses, file: URIs to system or credential paths (or outside the client's roots when known)"},
	rInjectedOrders:   {RuleInjectedOrders, FamilyPromptInjection, SeverityMedium, "instructions aimed at the model: IMPORTANT, CRITICAL and similar tags around orders, orders to set aside the instructions given before, orders to keep something from the person using the agent"},
	rGoogleOAuth:      {RuleGoogleOAuth, FamilySecret, SeverityInfo, "Google OAuth access token (ya29., ya29.c.), refresh token (1//) or client secret (GOCSPX-)"},
	rTelegram:         {RuleTelegramBot, FamilySecret, SeverityInfo, "Telegram bot token: bot id, a colon, and a 35-character secret starting AA (bare, in a .env line or a Bot API URL)"},
	rSupabase:         {RuleSupabaseKey, FamilySecret, SeverityInfo, "Supabase personal access token (sbp_) or secret API key (sb_secret_)"},
	rStripeWebhook:    {RuleStripeWebhook, FamilySecret, SeverityInfo, "Stripe webhook signing secret (whsec_)"},
	rDirective:        {RuleDirectiveToModel, FamilyPromptInjection, SeverityHigh, "an order addressed to the model in plain words: a note or instruction headed for the assistant or AI agents, agents reading the text told what they must do, a forged system line giving the model a new role (homoglyphs, fullwidth and invisible characters folded)"},
	rSecrecy:          {RuleSecrecyOrder, FamilyPromptInjection, SeverityHigh, "an order to keep something from the person using the agent: not to mention or reveal a step to them, to act behind their back, or a stealth adverb before an action"},
	rPromptRequest:    {RulePromptRequest, FamilyPromptInjection, SeverityHigh, "a request that the model hand over its own system prompt or hidden instructions (in a reply, an argument or a message)"},
	rEscalation:       {RuleEscalatingError, FamilyPromptInjection, SeverityHigh, "error text that orders an escalation: a retry through a privileged tool (a shell or admin tool), a download piped to a shell, the sandbox or approvals switched off"},
	rEncodedOrders:    {RuleEncodedOrders, FamilyPromptInjection, SeverityHigh, "base64 (standard or URL-safe) or hex that decodes to text holding an order to the model"},
	rToolTransfer:     {RuleToolTransfer, FamilyPromptInjection, SeverityMedium, "an order to act through a named tool on another server: run, call, invoke, execute or use an identifier on, via or through a named server, MCP, connector or integration (\"run deploy_prod on the ops server\", \"use the billing server's refund_payment\")"},
	rCredRequest:      {RuleCredentialRequest, FamilyPromptInjection, SeverityHigh, "a request that the agent or the user hand a credential over: paste or send a token, API key, password or a credential file's contents into the conversation, to a URL, or into a tool call's argument; or a standing order that the user's private data go out with the calls"},
	rCloudflare:       {RuleCloudflareToken, FamilySecret, SeverityInfo, "Cloudflare scannable credential: user or account API token (cfut_, cfat_) or global API key (cfk_), 40 alphanumerics and an 8-hex-digit checksum"},
}

// ruleByID maps rule ids to their index.
var ruleByID = func() map[string]ruleIndex {
	m := make(map[string]ruleIndex, len(ruleTable))
	for i, r := range ruleTable {
		m[r.ID] = ruleIndex(i)
	}
	return m
}()

// Rules lists every rule (built-in and catalogue), sorted by id.
func Rules() []Rule {
	out := make([]Rule, 0, len(ruleTable))
	out = append(out, ruleTable...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].ID < out[j-1].ID; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// isRedactable reports whether findings of rule r carry a PII or secret value.
func (r ruleIndex) isRedactable() bool {
	f := ruleTable[r].Family
	return f == FamilyPII || f == FamilySecret
}
