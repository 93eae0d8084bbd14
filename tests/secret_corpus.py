"""The corpus the secret scanner is measured on (figures in docs/reliability.md).

POSITIVES: text a user might paste into a chat or a note that holds a live credential; every
form the adversarial pass of issue #13 found stored under `ask`, and the usual provider formats.
The keys are made up (right shape, random characters). KNOWN_MISSES are positives the scanner
does not catch, kept here so the stated recall stays honest.
NEGATIVES: realistic text that holds no secret but looks close: hashes, UUIDs, commit ids, public
keys, placeholders, prose about passwords and tokens.
"""

from __future__ import annotations

GH = "ghp_" + "R8q2Lm4Tz7Xc1Vb9Nk3Hs6Jd0Fw5Gp2Ya8E"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq9T3mK1Lp"
SPLIT = "sk-proj-Ab3dEf6hIj9k Lm2nOp5qRs8tUv1wXy4z"

POSITIVES: tuple[str, ...] = (
    # the 25 forms of the adversarial pass (16 of them were stored before)
    "DB_PASSWORD=Xk3#pL9!vQ2m",
    f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}",
    "OPENAI_API_KEY=sk-Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz",
    "stripe: sk_live_51HcQ2bLk8PzX4mN7vR1tY9wE",
    "glpat-x7Rk2Pq9Lm4Tz8Vb3Nc1",
    "hf_aB3cD5eF7gH9iJ1kL3mN5oP7qR9sT1uV3w",
    "npm_aB3cD5eF7gH9iJ1kL3mN5oP7qR9sT1uV3wX5yZ",
    "postgres://admin:S3cr3tPa55@db.internal:5432/app",
    "Authorization: Bearer a1B2c3D4e5F6g7H8i9J0k1L2",
    "pass: tr0ub4dor&3",
    "api key: 9f8e7d6c5b4a3f2e1d0c",
    SPLIT,
    "sk\u2010proj\u2010Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
    "sk-proj-Ab3dEf6hIj9kLm2n\u200bOp5qRs8tUv1wXy4z",
    "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
    "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe",
    GH,
    "AKIAIOSFODNN7EXAMPLE",
    "xoxb-123456789012-abcdefABCDEF",
    "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----",
    "password=hunter2!",
    "secret_key = 'django-insecure-8f#k2$m9x!q'",
    "client_secret: GOCSPX-4bX9kQ2mL7pR1tV8wZ3y",
    # env files and configs
    "MYSQL_ROOT_PASSWORD=r00tPa$$w0rd",
    "POSTGRES_PASSWORD: pg_Pass_2024!",
    "ANTHROPIC_API_KEY=sk-ant-api03-Qa1Ws2Ed3Rf4Tg5Yh6Uj7Ik8Ol9",
    "GITHUB_TOKEN=" + GH,
    "export HF_TOKEN=hf_Zy9Xw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDc",
    'SLACK_BOT_TOKEN="xoxb-2048-1234567890-AbCdEfGhIjKl"',
    "REDIS_URL=redis://:p4ssw0rdRedis@cache:6379/0",
    "DATABASE_URL=mysql://app:Zq8!wX2v@10.0.0.5/prod",
    "amqp://guest:Gu3stP4ss@rabbit:5672/",
    "https://deploy:ghp_R8q2Lm4Tz7Xc1Vb9Nk3Hs6Jd0Fw5Gp2Ya8E@github.com/org/repo.git",
    "smtp_password: Mail#2024secure",
    "wifi password: Blue-Otter-42!",
    "The admin password = Summer2024!",
    '"apiKey": "AIza' + 'SyB9c8D7e6F5g4H3i2J1k0L9m8N7o6P5q4R"',
    '{"client_secret": "7f3c9a1e5b2d8f4a6c0e"}',
    "access_token: ya29.a0AfH6SMBx7Kq2Lm9Np4Rs8Tv1Wx3Yz5",
    "auth_token=4f9a8b7c6d5e4f3a2b1c0d9e",
    "private_key: MC4CAQAwBQYDK2VwBCIEIJ7x9k2L",
    "AccountKey=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA==",
    "passphrase: correct-horse-battery-staple-9",
    "curl -H 'Authorization: Bearer eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9x7'",
    "Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l",
    "Authorization: token ghp_aB3cD5eF7gH9iJ1kL3mN5oP7qR9sT1uV3w",
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n"
    "-----END OPENSSH PRIVATE KEY-----",
    "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oeR0\n"
    "-----END EC PRIVATE KEY-----",
    "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF0x9k8BCAC7\n-----END PGP PRIVATE KEY BLOCK-----",
    "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    "sk_test_4eC39HqLyjWDarjtT1zdp7dc",
    "rk_live_51HcQ2bLk8PzX4mN7vR1tY9wEaQ",
    "github_pat_11ABCDEFG0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789",
    "gho_aB3cD5eF7gH9iJ1kL3mN5oP7qR9sT1uV3w",
    "SG.aB3cD5eF7gH9iJ1kL3mN5o.pQ7rS9tU1vW3xY5zA7bC9dE1fG3hI5jK7lM9nO1pQ3",
    "ASIAY34FZKBOKMUTVV7A",
    "telegram bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw9",
    "my new token is xoxp-1111-2222-3333-abcdefabcdef0123",
    "pwd: 8Hj#kL2p",
    "Use api_key=AbC123xYz789QwE456 for the staging server",
    "token: 5f2b1c9e-8d7a-4e3f-b2c1-9a8d7e6f5a4b-extra",
    "OPENAI_API_KEY = \"sk-Xy1Zw2Vu3Ts4Rq5Po6Nm7Lk8Ji9\"",
    "ftp://user:fTp_pa55@files.example.org/pub",
)

# Forms the scanner does not catch; kept in the measure (recall is stated with them).
KNOWN_MISSES: tuple[str, ...] = (
    "my password is hunter2",
    f"the AWS secret for prod is {AWS_SECRET}",
    "twilio SKa1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6",
)

NEGATIVES: tuple[str, ...] = (
    # hashes, ids, commit shas
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "Fixed in a3f5c2e; see 4b825dc642cb6eb9a060e54bf8d69288fbee4904.",
    "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
    "md5 d41d8cd98f00b204e9800998ecf8427e",
    "The request id was 3fa85f64-5717-4562-b3fc-2c963f66afa6.",
    "memory 6f1c2a9e-0b7d-4c3e-9a51-2d8e7f4b6c10 was restored",
    "docker pull python@sha256:0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f",
    "git checkout -b feature/tokenizer-cleanup",
    "Release v2.14.0-rc1+build.20250101",
    "20250101T000000Z__summary-trip.md",
    # public keys and placeholders
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGr8x0nP5d2bS7w1xVjQ3u9bK2mL4p6R8t0Y user@laptop",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "OPENAI_API_KEY=${OPENAI_API_KEY}",
    "password: <your password here>",
    "api_key: YOUR_API_KEY",
    "DB_PASSWORD=********",
    "export GITHUB_TOKEN=$GITHUB_TOKEN",
    "token: null",
    "password=%(password)s",
    "Authorization: Bearer <token>",
    "stripe publishable key pk_live_51HcQ2bLk8PzX4mN7vR1tY9wE is safe to embed",
    "secret: [redacted:openai_key]",
    # prose about passwords, keys and tokens
    "I need to reset my password tomorrow.",
    "The password policy requires at least 12 characters.",
    "Use a password manager such as Bitwarden or 1Password.",
    "The API key is stored in the team vault, not in the repo.",
    "Set OPENAI_API_KEY in your environment before running the script.",
    "max_tokens=4096",
    "max_tokens: 128000",
    "token_count: 1234567",
    "The tokenizer splits text into tokens.",
    "He was the bearer of bad news.",
    "The secret to good bread is patience.",
    "secret_santa: true",
    "My private key lives in ~/.ssh/id_ed25519 and never leaves the laptop.",
    "pwd prints the current working directory; cd $(pwd)/build",
    "Hall pass: required for all students",
    "passport: renewed in March",
    "The access key rotation happens every 90 days.",
    "Remember: the wifi password is on the fridge.",
    "user prefers sk-learn (scikit-learn) for quick models and notebooks",
    "Bearer tokens expire after 3600 seconds.",
    "credentials: see the onboarding doc",
    "client_secret is issued by the OAuth provider when you register the app",
    # URLs, emails and other look-alikes
    "Clone git@github.com:desktop-mem/desktop_mem.git",
    "https://example.com/login?next=/dashboard",
    "Visit http://localhost:8080/api/chat/sessions for the list.",
    "mailto:alice@example.org",
    "ssh bob@build-server.internal -p 2222",
    "https://user@gitlab.com/group/project.git",
    "The ticket is JIRA-4821; the IBAN is on the invoice.",
    "Call +1 (555) 010-4477 after 6pm.",
    "ISBN 978-0-13-468599-1",
    "The GPU is an RTX 4090 with 24GB.",
    "Meeting at 2025-03-14T09:30:00Z in room B-204.",
    "base64 of hello is aGVsbG8=",
    "eyJhbGciOiJIUzI1NiJ9 is just a JWT header",
    "The chroma collection is memories_all-MiniLM-L6-v2",
    "AIza is the prefix Google uses for its API keys.",
    "xox is how Slack tokens begin",
    "The hf_hub_download function fetches a file.",
    "npm_config_cache=/tmp/npm-cache",
    "glpat tokens can be scoped to one project",
    "sk_live_ keys belong on the server only",
    "Order #A1B2C3D4E5F6 shipped.",
    "Plant the tomatoes 45 cm apart.",
)
