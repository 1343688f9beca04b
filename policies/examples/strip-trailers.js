// strip-trailers.js — the idiomatic strip-co-authored-by.js: remove the
// Co-Authored-By trailers AI coding agents add to pull request descriptions and commit
// messages before they reach GitHub (pre phase), with the Go-backed ctx.removeLines
// instead of regular expressions. Add more prefixes to drop other trailers.
if (ctx.phase !== "pre") return;
var trailers = ["co-authored-by:"];
if (ctx.tool === "github_create_pull" || ctx.tool === "github_update_pull") {
  ctx.params.body = ctx.removeLines(ctx.params.body, trailers);
}
if (ctx.tool === "github_merge_pull") {
  ctx.params.commit_message = ctx.removeLines(ctx.params.commit_message, trailers);
}
if (ctx.tool === "github_create_git_commit") {
  ctx.params.message = ctx.removeLines(ctx.params.message, trailers);
}
