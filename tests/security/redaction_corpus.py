"""Secrets the way agent transcripts carry them, and ordinary text that only looks close.

The formats follow public secret-scanner rule sets (gitleaks' rules, trufflehog's detectors,
GitHub's secret scanning patterns): a token with a prefix of its own, a credential inside a
connection string, a configuration file or a command, a header written as code. Every value
is made up. `LEAKS` is what the default redactor must hide, `ORDINARY` what it must leave
as it is.
"""

from __future__ import annotations

import base64
import random
import string

import attrs

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"


def fake(alphabet: str, size: int, seed: int) -> str:
    """A made-up value of `size` characters from `alphabet`, the same on every run."""
    draw = random.Random(seed)
    return "".join(draw.choice(alphabet) for _ in range(size))


@attrs.frozen
class Leak:
    """A text holding `secret`, written as a tool, a file or a person writes it."""

    name: str
    text: str
    secret: str


def _leak(name: str, template: str, secret: str) -> Leak:
    return Leak(name, template.replace("{s}", secret), secret)


GITHUB_FINE = (
    "github_pat_11" + fake(ALNUM.upper() + string.digits, 20, 1) + "_" + fake(ALNUM, 59, 2)
)
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJzdWIiOiJkZXBsb3ktYm90Iiwicm9sZSI6ImFkbWluIiwiaWF0IjoxNzE2MjM5MDIyfQ."
    + fake(ALNUM + "-_", 43, 3)
)
AZURE_KEY = fake(B64, 86, 4) + "=="
PEM_BODY = "\n".join(fake(B64, 64, 10 + i) for i in range(4))
DOCKER_AUTH = base64.b64encode(b"deploy:Dk3r-p4ss-w0rd").decode()
BASIC = base64.b64encode(b"admin:s3cr3t").decode()
KUBE_KEY_DATA = base64.b64encode(
    b"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIO" + fake(B64, 60, 5).encode()
).decode()
STS_TOKEN = "IQoJb3JpZ2luX2VjE" + fake(B64, 380, 6)

LEAKS: tuple[Leak, ...] = (
    # Tokens whose prefix names their issuer.
    _leak("github fine-grained token", "git push https://{s}@github.com/acme/app.git", GITHUB_FINE),
    _leak(
        "github token as a URL's user",
        "remote: https://{s}@github.com/acme/app",
        "ghp_" + fake(ALNUM, 36, 20),
    ),
    _leak(
        "github app token in a URL",
        "https://x-access-token:{s}@github.com/acme/app.git",
        "ghs_" + fake(ALNUM, 36, 21),
    ),
    _leak(
        "gitlab token",
        "PRIVATE-TOKEN header set from {s} for the API",
        "glpat-" + fake(ALNUM + "-_", 20, 22),
    ),
    _leak(
        "gitlab routable token",
        "token {s} created",
        "glpat-" + fake(ALNUM, 36, 23) + ".01.0w1" + fake(HEX, 6, 23),
    ),
    _leak(
        "slack bot token",
        "client = WebClient({s})",
        "xoxb-"
        + fake(string.digits, 12, 24)
        + "-"
        + fake(string.digits, 13, 25)
        + "-"
        + fake(ALNUM, 24, 26),
    ),
    _leak(
        "slack user token",
        "'{s}'",
        "xoxp-"
        + fake(string.digits, 12, 27)
        + "-"
        + fake(string.digits, 12, 28)
        + "-"
        + fake(string.digits, 13, 29)
        + "-"
        + fake(HEX, 32, 30),
    ),
    _leak(
        "slack app token",
        'SocketModeHandler(app, "{s}").start()',
        "xapp-1-A0"
        + fake(ALNUM.upper(), 9, 31)
        + "-"
        + fake(string.digits, 13, 32)
        + "-"
        + fake(HEX, 64, 33),
    ),
    _leak(
        "slack webhook",
        "curl -X POST {s} -d @msg.json",
        "https://hooks.slack.com/services/T0"
        + fake(ALNUM.upper(), 8, 34)
        + "/B0"
        + fake(ALNUM.upper(), 8, 35)
        + "/"
        + fake(ALNUM, 24, 36),
    ),
    _leak("stripe live key", "stripe.api_key = '{s}'", "sk_live_" + fake(ALNUM, 24, 37)),
    _leak("stripe restricted key", "charge with {s}", "rk_live_" + fake(ALNUM, 24, 38)),
    _leak("stripe webhook secret", "endpoint secret is {s}", "whsec_" + fake(ALNUM, 32, 39)),
    _leak(
        "google api key",
        "https://maps.googleapis.com/maps/api/geocode/json?address=x&key={s}",
        "AIza" + fake(ALNUM + "-_", 35, 40),
    ),
    _leak(
        "google oauth client secret",
        "OAuth client 1234-ab.apps.googleusercontent.com created: {s}",
        "GOCSPX-" + fake(ALNUM + "-_", 28, 41),
    ),
    _leak("google oauth access token", "got ya: {s}", "ya29." + fake(ALNUM + "-_", 120, 42)),
    _leak(
        "npm token",
        "//registry.npmjs.org/:_authToken=${NPM}\nused {s}",
        "npm_" + fake(ALNUM, 36, 43),
    ),
    _leak(
        "pypi token",
        "twine upload -u __token__ -p {s} dist/*",
        "pypi-AgEIcHlwaS5vcmc" + fake(ALNUM + "-_", 60, 44),
    ),
    _leak(
        "hugging face token",
        'from huggingface_hub import login\nlogin("{s}")',
        "hf_" + fake(string.ascii_letters, 34, 45),
    ),
    _leak(
        "sendgrid key",
        "sg = SendGridAPIClient('{s}')",
        "SG." + fake(ALNUM + "-_", 22, 46) + "." + fake(ALNUM + "-_", 43, 47),
    ),
    _leak("twilio api key", "Client('{s}', api_secret, account_sid)", "SK" + fake(HEX, 32, 48)),
    _leak(
        "anthropic key",
        "client = Anthropic(api_key=os.environ.get('X', '{s}'))",
        "sk-ant-api03-" + fake(ALNUM + "-_", 93, 49) + "AA",
    ),
    _leak(
        "databricks token",
        "databricks configure --host h --token-value {s}",
        "dapi" + fake(HEX, 32, 50),
    ),
    _leak("digitalocean token", "doctl auth init -t {s}", "dop_v1_" + fake(HEX, 64, 51)),
    _leak("shopify token", "X-Shopify-Access-Token header {s}", "shpat_" + fake(HEX, 32, 52)),
    _leak("vault token", "vault login {s}", "hvs." + fake(ALNUM + "-_", 92, 53)),
    _leak("jwt", "Cookie-less session {s} expired", JWT),
    _leak("aws session token (sts)", "SessionToken\n{s}", STS_TOKEN),
    # Private keys, whole, encrypted, or encoded.
    _leak(
        "openssh private key",
        "-----BEGIN OPENSSH PRIVATE KEY-----\n{s}\n-----END OPENSSH PRIVATE KEY-----",
        PEM_BODY,
    ),
    _leak(
        "encrypted rsa key",
        "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n"
        "DEK-Info: AES-128-CBC,3F17F5316E2BAC89\n\n{s}\n-----END RSA PRIVATE KEY-----",
        PEM_BODY,
    ),
    _leak(
        "pkcs8 encrypted key in json",
        '{"private_key": "-----BEGIN ENCRYPTED PRIVATE KEY-----\\n{s}'
        '\\n-----END ENCRYPTED PRIVATE KEY-----\\n"}',
        PEM_BODY.replace("\n", "\\n"),
    ),
    _leak(
        "kubeconfig client key",
        "users:\n- name: admin\n  user:\n    client-key-data: {s}",
        KUBE_KEY_DATA,
    ),
    _leak("base64 private key", "echo {s} | base64 -d > id", KUBE_KEY_DATA),
    # Connection strings.
    _leak(
        "postgres url",
        "DATABASE_URL=postgres://app:{s}@db.internal:5432/app",
        "pg-" + fake(ALNUM, 16, 60),
    ),
    _leak(
        "mongodb srv url",
        'MongoClient("mongodb+srv://admin:{s}@cluster0.ab1cd.mongodb.net/?retryWrites=true")',
        fake(ALNUM, 18, 61),
    ),
    _leak(
        "redis url without user",
        "REDIS_URL=redis://:{s}@cache.internal:6379/0",
        fake(ALNUM, 20, 62),
    ),
    _leak("amqp url", "broker_url = 'amqp://guest:{s}@rabbit:5672//'", fake(ALNUM, 14, 63)),
    _leak(
        "azure storage key",
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={s};EndpointSuffix=core.windows.net",
        AZURE_KEY,
    ),
    _leak(
        "azure service bus key",
        "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={s}",
        fake(B64, 43, 64) + "=",
    ),
    _leak(
        "sql server connection string",
        "Server=tcp:db,1433;Database=app;User ID=app;Password={s};Encrypt=True",
        "Pw!" + fake(ALNUM, 12, 65),
    ),
    _leak(
        "libpq keywords",
        'psycopg.connect("host=db dbname=app user=app password={s}")',
        fake(ALNUM, 12, 66),
    ),
    _leak(
        "jdbc url",
        "jdbc:postgresql://db:5432/app?user=app&password={s}&ssl=true",
        fake(ALNUM, 12, 67),
    ),
    # Credential files.
    _leak("netrc line", "machine api.internal login deploy password {s}", fake(ALNUM, 14, 70)),
    _leak(
        "netrc lines", "machine api.internal\n  login deploy\n  password {s}\n", fake(ALNUM, 14, 71)
    ),
    _leak(
        "pgpass line",
        "$ cat ~/.pgpass\ndb.internal:5432:app:app_user:{s}",
        "pgp" + fake(ALNUM, 12, 72),
    ),
    _leak("pgpass wildcard line", "echo '*:*:*:postgres:{s}' >> ~/.pgpass", fake(ALNUM, 12, 73)),
    _leak("docker config auth", '{"auths": {"registry.internal": {"auth": "{s}"}}}', DOCKER_AUTH),
    _leak("kubeconfig token", "users:\n- name: ci\n  user:\n    token: {s}", fake(ALNUM, 40, 74)),
    _leak(
        "aws credentials file",
        "[default]\naws_access_key_id = AKIA"
        + fake(ALNUM.upper(), 16, 75)
        + "\naws_session_token = {s}",
        fake(B64, 200, 76),
    ),
    _leak("pypirc", "[pypi]\nusername = __token__\npassword = {s}", fake(ALNUM, 20, 77)),
    # Headers, as text and as code.
    _leak("basic auth header", "Authorization: Basic {s}", BASIC),
    _leak("header tuple list", 'headers = [("Authorization", "Bearer {s}")]', fake(ALNUM, 12, 80)),
    _leak(
        "basic auth tuple", "session.headers.update(dict([('Authorization', 'Basic {s}')]))", BASIC
    ),
    _leak("api key header pair", '{"name": "X-Api-Key", "value": "{s}"}', fake(ALNUM, 24, 81)),
    _leak(
        "postman header pair", '{"key": "Authorization", "value": "Token {s}"}', fake(ALNUM, 12, 82)
    ),
    _leak(
        "api key tuple",
        'requests.get(url, headers=dict([("X-API-KEY", "{s}")]))',
        fake(ALNUM, 24, 83),
    ),
    _leak("raw authorization header", "-H 'Authorization: {s}'", fake(ALNUM, 32, 84)),
    _leak("subscription key header", "Ocp-Apim-Subscription-Key: {s}", fake(HEX, 32, 85)),
    # Named by a short key, or by a sentence.
    _leak("json pass key", '{"user": "app", "pass": "{s}"}', fake(ALNUM, 10, 90)),
    _leak("yaml pw key", "db:\n  user: app\n  pw: {s}\n", fake(ALNUM, 10, 91)),
    _leak(
        "password then word",
        "use the password {s} for the staging box",
        "hunter2" + fake(ALNUM, 4, 92),
    ),
    _leak("password is", "My password is {s} btw", "Summer" + fake(string.digits, 4, 93) + "!"),
    _leak(
        "password is a plain word",
        "fyi the wifi password is {s}, ask Sam for the guest one",
        fake(string.ascii_lowercase, 9, 97),
    ),
    _leak("pw colon in prose", "creds for the box: pw: {s}", "x" + fake(ALNUM, 9, 94)),
    _leak(
        "password flag equals", "./manage.py createsuperuser --password={s}", fake(ALNUM, 12, 95)
    ),
    _leak("prefixed password flag", "deploy --db-password {s} --env prod", fake(ALNUM, 12, 96)),
    _leak("sshpass", "sshpass -p '{s}' ssh deploy@10.0.0.5", fake(ALNUM, 12, 97)),
    _leak("docker login -p", "docker login -u ci -p {s} registry.internal", fake(ALNUM, 12, 98)),
    _leak("redis-cli -a", "redis-cli -h cache -a {s} ping", fake(ALNUM, 12, 99)),
    _leak(
        "openssl passin",
        "openssl rsa -in key.pem -passin pass:{s} -out plain.pem",
        fake(ALNUM, 12, 100),
    ),
    _leak("env file", "# .env\nAPP_ENV=prod\nSTRIPE_WEBHOOK_SECRET={s}\n", fake(ALNUM, 24, 101)),
    _leak("shell export", 'export OPENROUTER_API_KEY="{s}"', fake(ALNUM, 32, 102)),
    _leak(
        "python kwarg",
        "conn = pymysql.connect(host='db', user='root', password=\"{s}\")",
        fake(ALNUM, 12, 103),
    ),
    _leak("url query", "GET /v1/items?api_key={s}&token=abc123def456", fake(ALNUM, 20, 104)),
    _leak("url query token", "GET /v1/items?page=2&token={s}", fake(ALNUM, 20, 105)),
    _leak(
        "azure sas signature",
        "https://acme.blob.core.windows.net/c/b.txt?sv=2022-11-02&ss=b&sp=r&se=2030-01-01&sig={s}",
        fake(ALNUM, 40, 106) + "%3D",
    ),
    _leak(
        "aws presigned signature",
        "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature={s}",
        fake(HEX, 64, 107),
    ),
    _leak("aws session token env", "AWS_SESSION_TOKEN={s}", fake(B64, 300, 108)),
    _leak(
        "escaped json password",
        '{"body": "{\\"user\\": \\"app\\", \\"password\\": \\"{s}\\"}"}',
        fake(ALNUM, 12, 109),
    ),
    _leak(
        "escaped json token",
        '"{\\"access_token\\":\\"{s}\\",\\"expires_in\\":3600}"',
        fake(ALNUM, 30, 110),
    ),
)
"""Secrets the default redactor must hide, each in a text that carries it as it is found."""


ORDINARY: tuple[str, ...] = (
    "max_tokens=1024, MAX_TOKENS = 4096, token_count = 1234, tokens_used: 5120",
    "Tokens: 123,456 in / 7,890 out (cache read: 120,000)",
    "hashed = password_hash(password, PASSWORD_HASHERS[0])",
    "def login(username: str, password: str) -> Token: ...",
    "def check(token: Optional[str] = None, secret: bytes = b'') -> bool:",
    "let token = try tokens.shift()? else return end",
    "    token: String,\n    args: Array[String] val,",
    "        'token': ObjType(_('grammar token'), 'token'),",
    "        'token':   TokenXRefRole(),",
    "password = os.environ['DB_PASSWORD']\ntoken = request.headers.get('Authorization')",
    "secret = settings.SECRET_KEY\napi_key = self.api_key",
    "password = getpass.getpass()\npw = input('Password: ')",
    "git checkout -b fix-login && git push -u origin fix-login",
    "from transformers import AutoTokenizer\ntokenizer = AutoTokenizer.from_pretrained(name)",
    "===== 120 passed, 3 skipped in 4.21s =====\n"
    "PASS: tests/test_login.py\n--- PASS: TestAuth (0.01s)",
    "bypass the cache; compass heading 270; the passage is passable",
    "commit 3f9a1c2e8b7d6f5a4c3b2a1908f7e6d5c4b3a291\nAuthor: Dev <dev@example.com>",
    "request id 6f1c2d3e-4b5a-6978-8a9b-0c1d2e3f4a5b, trace 0af7651916cd43dd8448eb211c80319c",
    "File \"/home/dev/app/auth/tokens.py\", line 42, in refresh_token\nKeyError: 'SECRET_KEY'",
    "curl -s https://api.github.com/repos/acme/app/pulls?state=open&per_page=50",
    "The password field is required; passwords must be 12 characters; reset your password.",
    "the password is wrong, the password is incorrect, password is None",
    "docker run -p 8080:80 -e LOG_LEVEL=debug app && psql -h db -p 5432 -U app",
    "mysql -u root -p appdb",
    "PASS: 12\nFAIL: 0\npass: true",
    "Authorization header missing; the authorization server returned 401",
    '{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": '
    '"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="}}',
    "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJrVENCK3dJSkFLSEhDZ0Q=",
    'fields = ("username", "password", "email")\n["token", "created"]',
    "auth: true\nauth = AuthMiddleware(app)\nkey: value",
    "sk_test_ in the docs means a test key prefix; hf_hub_download(repo_id)",
)
"""Code, logs and prose a redactor must leave unchanged."""
