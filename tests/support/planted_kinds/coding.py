"""Coding sessions: a Japanese refactoring (tool-heavy) and an editor plugin (chat-heavy)."""

from __future__ import annotations

from pathlib import Path

from tests.support.planted_kinds.session import PlantedSession


def coding_ja(out: Path) -> list[Path]:
    """Coding, Japanese, tool-heavy: owners by name, branch, env vars, deadlines with JST,
    keyboard shortcuts, commit message, a reversal by the agent."""
    s = PlantedSession(
        "coding-ja-905", 905, "あなたはコーディングエージェントです。日本語で答えてください。"
    )
    s.user("決済モジュールのリファクタリングをお願いします。まず構成を見てください。")
    s.call("確認します。", "bash", {"command": "ls -R services | head -150"}, s.log(70))
    s.say("services 配下に四つのサービスがあります。")
    s.plant("person", "user", "田中さん", "佐藤チーム")
    s.pair("owner", "user", "田中さん", "決済API")
    s.plant("branch", "user", "refactor/payment-v3")
    s.plant("deadline_tz", "user", "金曜日18時(JST)")
    s.plant("quoted", "user", "fix(payment): 二重課金を防ぐ冪等キーを追加")
    s.plant("shortcut", "user", "Ctrl+Shift+R")
    s.user(
        "決済APIの担当は田中さん、通知まわりは佐藤チームです。"
        "作業ブランチは refactor/payment-v3 で、"
        "締め切りは金曜日18時(JST)です。"
        "コミットメッセージは「fix(payment): 二重課金を防ぐ冪等キーを追加」に"
        "してください。ステージングのキャッシュは Ctrl+Shift+R で強制リロードして確認してください。"
    )
    s.say("承知しました。")
    s.plant("envvar", "agent", "PAYMENT_IDEMPOTENCY_TTL=86400", "STRIPE_API_VERSION")
    s.plant("endpoint", "agent", "POST /api/v3/charges")
    s.reversal("キーは UUIDv4 で生成することにしました", "ULID に切り替えました", "agent")
    settings = "services/billing/settings.py"
    s.call("設定を読みます。", "read_file", {"path": settings}, s.code(settings, 100))
    s.say(
        "冪等キーの有効期限は PAYMENT_IDEMPOTENCY_TTL=86400 で、STRIPE_API_VERSION も固定します。"
        "対象のエンドポイントは POST /api/v3/charges です。キーは UUIDv4 で生成することにしました。"
    )
    for k in range(10):
        s.filler_turn(k, ask=f"次に進めてください（{k}）。")
    s.say("ソート順が必要なので、キーは UUIDv4 ではなく ULID に切り替えました。")
    for k in range(10, 25):
        s.filler_turn(k, ask=f"続けてください（{k}）。")
    s.late(
        "レビューは誰に頼めばいいですか？",
        "レビューは鈴木さんにお願いしてください。Webhook は POST /webhooks/stripe で受けます。"
        "IDE では Ctrl+Shift+F で全体検索できます。",
        [
            ("person", "鈴木さん"),
            ("endpoint", "POST /webhooks/stripe"),
            ("shortcut", "Ctrl+Shift+F"),
        ],
    )
    for k in range(25, 27):
        s.filler_turn(k, ask=f"続けてください（{k}）。")
    s.user(
        "まとめてください：担当者、ブランチ、締め切り、コミットメッセージ、"
        "リロードのショートカット、環境変数、エンドポイント、キーの形式。"
    )
    s.say("まとめます。")
    return s.write(out)


def coding_chat(out: Path) -> list[Path]:
    """Coding, English, chat-heavy with many short prompts (each a request): keyboard
    shortcuts, short flags, version constraints, config keys, commit message, branch, tags,
    PR numbers, a reversal of a library choice by the user, people in prose by the agent."""
    s = PlantedSession(
        "editor-plugin-908", 908, "You are a coding assistant for a VS Code extension."
    )
    s.user("We're building the Quill VS Code extension. Keep answers short.")
    s.say("Sure.")
    s.plant("shortcut", "user", "Ctrl+Alt+Q", "Cmd+Shift+.")
    s.plant("verconstraint", "user", '"vscode": "^1.85.0"', "node >=20 <23")
    s.plant("config", "user", "quill.formatOnSave", "quill.maxLineLength")
    s.user(
        "Bind the format command to Ctrl+Alt+Q on Windows and Cmd+Shift+. on macOS. engines "
        'must be "vscode": "^1.85.0" and we support node >=20 <23. Settings are '
        "quill.formatOnSave (default true) and quill.maxLineLength (default 100)."
    )
    s.say("Noted.")
    s.plant("quoted", "user", "feat(format): add range formatting")
    s.plant("branch", "user", "feat/range-format")
    s.plant("tag", "user", "v0.9.0-beta.2")
    s.plant("pr", "user", "PR 112")
    s.user(
        'Commit as "feat(format): add range formatting" on branch feat/range-format, tag the '
        "build v0.9.0-beta.2, and link PR 112 in the changelog."
    )
    s.say("OK.")
    s.reversal("use prettier", "use dprint", "user")
    s.user("For the formatter engine, use prettier.")
    s.say("I'll wire prettier in.")
    s.plant("person", "agent", "Sam Whitaker", "Lena Fischer")
    s.say(
        "From the git log, Sam Whitaker wrote the tokenizer and Lena Fischer maintains the "
        "grammar files, so they are the reviewers to ask."
    )
    s.plant("cliflag", "agent", "npm i -g @vscode/vsce", "--no-dependencies")
    s.say(
        "Package it with vsce package --no-dependencies, and install it locally with "
        "npm i -g @vscode/vsce."
    )
    for k in range(40):
        s.chat_turn(k)
    s.user("Switching engines: drop prettier, use dprint — prettier is too slow on big files.")
    s.say("Switched to dprint.")
    for k in range(40, 150):
        s.chat_turn(k)
    s.late(
        "Who should review the grammar change, and how do I debug it?",
        "Ask Rosa Delgado; she owns the TextMate grammar. Debug with F5 then Ctrl+Shift+I for "
        'the webview devtools, and set "quill.trace.server": "verbose" to see the LSP traffic.',
        [
            ("person", "Rosa Delgado"),
            ("shortcut", "Ctrl+Shift+I"),
            ("config", "quill.trace.server"),
        ],
    )
    for k in range(150, 156):
        s.chat_turn(k)
    s.user(
        "Remind me: keybindings, engine and node constraints, setting names, commit message, "
        "branch, tag, PR, which formatter engine, who to ask for review, and the packaging flags."
    )
    s.say("Here you go.")
    return s.write(out)
