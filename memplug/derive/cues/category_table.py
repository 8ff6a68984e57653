"""Things of one kind that a project picks one of: a decision naming one of them replaces an
earlier decision naming another of the same kind (docs/extraction.md, "Choices of one
kind"). Terms are matched as whole words, case-insensitively; a term with a space or a dot
is matched as written. Raise ``VERSION`` with any change: derived items are made again.

A literal table, not a data file: every ``Stop`` hook reads it, and loading a TOML file
through ``importlib.resources`` cost that hook ~15 ms of its ~160.
"""

from __future__ import annotations

VERSION = 1

# fmt: off
CATEGORIES: dict[str, tuple[str, ...]] = {
    "database": ("postgresql", "postgres", "mysql", "mariadb", "sqlite", "mongodb", "dynamodb",
                 "cassandra", "cockroachdb", "supabase", "duckdb", "oracle", "sql server"),
    "language": ("python", "typescript", "javascript", "rust", "golang", "java", "kotlin", "ruby",
                 "elixir", "swift", "c#", "php", "scala", "zig"),
    "web_framework": ("django", "flask", "fastapi", "starlette", "litestar", "rails", "next.js",
                      "nextjs", "nuxt", "sveltekit", "phoenix", "spring boot", "laravel", "hono"),
    "ui_framework": ("react", "vue", "svelte", "angular", "preact", "htmx"),
    "test_runner": ("pytest", "unittest", "jest", "vitest", "mocha", "playwright", "cypress",
                    "rspec", "minitest", "exunit"),
    "package_manager": ("npm", "pnpm", "yarn", "bun", "pip", "pipx", "poetry", "uv", "conda",
                        "pdm"),
    "ci_system": ("github actions", "gitlab ci", "circleci", "jenkins", "travis", "buildkite",
                  "azure pipelines"),
    "container_tool": ("docker", "podman", "apple container", "colima", "orbstack", "containerd"),
    "bundler": ("vite", "webpack", "esbuild", "rollup", "parcel", "turbopack", "rspack"),
    "cloud": ("aws", "gcp", "azure", "fly.io", "vercel", "netlify", "heroku", "cloudflare",
              "daytona"),
    "orm": ("sqlalchemy", "prisma", "drizzle", "typeorm", "sequelize", "django orm", "ecto"),
}
# fmt: on
