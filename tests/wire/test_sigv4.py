"""AWS Signature Version 4: the published test-suite vectors and documentation examples, and
the double-encoded path Bedrock model ids need."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from modelwire.wire.sigv4 import canonical_query, canonical_request, canonical_uri, sign

ACCESS = "AKIDEXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
WHEN = datetime(2015, 8, 30, 12, 36, tzinfo=UTC)
HOST = "https://example.amazonaws.com"
SCOPE = "AKIDEXAMPLE/20150830/us-east-1/service/aws4_request"
STS_TOKEN = (
    "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPf"
    "IeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7"
    "WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm"
    "8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA=="
)

# The AWS SigV4 test suite ("aws-sig-v4-test-suite", as shipped in the botocore 1.44.8 sdist at
# tests/unit/auth/aws4_testsuite/<name>/<name>.req and .authz): method, path and query as
# sent, the request's headers besides Host and X-Amz-Date, body, session token, and the
# SignedHeaders / Signature of the expected Authorization header. Credentials AKIDEXAMPLE,
# date 20150830T123600Z, region us-east-1, service "service".
SUITE = [
    ("get-vanilla", "GET", "/", {}, b"", None, "host;x-amz-date",
     "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
    ("get-vanilla-query-order-key-case", "GET", "/?Param2=value2&Param1=value1", {}, b"", None,
     "host;x-amz-date", "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"),
    ("get-utf8", "GET", "/ሴ", {}, b"", None, "host;x-amz-date",
     "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85"),
    ("get-vanilla-utf8-query", "GET", "/?ሴ=bar", {}, b"", None, "host;x-amz-date",
     "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04"),
    ("get-unreserved", "GET",
     "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", {}, b"", None,
     "host;x-amz-date", "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f"),
    ("post-x-www-form-urlencoded", "POST", "/",
     {"Content-Type": "application/x-www-form-urlencoded"}, b"Param1=value1", None,
     "content-type;host;x-amz-date",
     "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"),
    ("post-header-key-sort", "POST", "/", {"My-Header1": "value1"}, b"", None,
     "host;my-header1;x-amz-date",
     "c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c"),
    ("get-header-value-trim", "GET", "/", {"My-Header1": " value1", "My-Header2": ' "a   b   c"'},
     b"", None, "host;my-header1;my-header2;x-amz-date",
     "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"),
    ("post-sts-header-before", "POST", "/", {}, b"", STS_TOKEN,
     "host;x-amz-date;x-amz-security-token",
     "85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead"),
    ("get-vanilla-with-session-token", "GET", "/", {}, b"",
     "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267",
     "host;x-amz-date;x-amz-security-token",
     "07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8"),
    ("normalize-path/get-slashes", "GET", "//example//", {}, b"", None, "host;x-amz-date",
     "9a624bd73a37c9a373b5312afbebe7a714a789de108f0bdfe846570885f57e84"),
    ("normalize-path/get-relative-relative", "GET", "/example1/example2/../..", {}, b"", None,
     "host;x-amz-date", "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
    ("normalize-path/get-space", "GET", "/example space/", {}, b"", None, "host;x-amz-date",
     "652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("method", "path", "headers", "body", "token", "signed", "signature"),
    [pytest.param(*case[1:], id=case[0]) for case in SUITE],
)
def test_aws_sigv4_test_suite_vector(
    method: str,
    path: str,
    headers: dict[str, str],
    body: bytes,
    token: str | None,
    signed: str,
    signature: str,
) -> None:
    out = sign(
        method,
        HOST + path,
        {"Host": "example.amazonaws.com", **headers},
        body,
        access_key=ACCESS,
        secret_key=SECRET,
        session_token=token,
        region="us-east-1",
        service="service",
        now=WHEN,
        content_sha256_header=False,  # the suite signs no payload-hash header
    )
    assert out["Authorization"] == (
        f"AWS4-HMAC-SHA256 Credential={SCOPE}, SignedHeaders={signed}, Signature={signature}"
    )
    assert out["X-Amz-Date"] == "20150830T123600Z"
    assert ("X-Amz-Security-Token" in out) == (token is not None)


def test_suite_canonical_request_of_post_x_www_form_urlencoded() -> None:
    # aws4_testsuite/post-x-www-form-urlencoded/post-x-www-form-urlencoded.creq
    creq, signed = canonical_request(
        "POST",
        HOST + "/",
        {
            "Content-Type": "application/x-www-form-urlencoded",
            "Host": "example.amazonaws.com",
            "X-Amz-Date": "20150830T123600Z",
        },
        "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e",
    )
    assert creq == (
        "POST\n/\n\ncontent-type:application/x-www-form-urlencoded\nhost:example.amazonaws.com\n"
        "x-amz-date:20150830T123600Z\n\ncontent-type;host;x-amz-date\n"
        "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e"
    )
    assert signed == "content-type;host;x-amz-date"


@pytest.mark.parametrize(
    ("method", "url", "body", "when", "signature"),
    [
        # AWS General Reference, "Create a signed AWS API request" (IAM ListUsers, 2015)
        (
            "GET",
            "https://iam.amazonaws.com/?Action=ListUsers&Version=2010-05-08",
            b"",
            WHEN,
            "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
        ),
        # AWS General Reference, "Signed Signature Version 4 Requests Examples" (2011 POST)
        (
            "POST",
            "http://iam.amazonaws.com/",
            b"Action=ListUsers&Version=2010-05-08",
            datetime(2011, 9, 9, 23, 36, tzinfo=UTC),
            "ced6826de92d2bdeed8f846f0bf508e8559e98e4b0199114b84c54174deb456c",
        ),
    ],
    ids=["iam-list-users-get-2015", "iam-list-users-post-2011"],
)
def test_aws_documentation_iam_list_users_example(
    method: str, url: str, body: bytes, when: datetime, signature: str
) -> None:
    out = sign(
        method,
        url,
        {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"},
        body,
        access_key=ACCESS,
        secret_key=SECRET,
        session_token=None,
        region="us-east-1",
        service="iam",
        now=when,
        content_sha256_header=False,
    )
    assert out["Authorization"].endswith(
        f"SignedHeaders=content-type;host;x-amz-date, Signature={signature}"
    )


def test_bedrock_model_id_path_is_signed_double_encoded() -> None:
    # the wire path carries `%3A`; SigV4 (every service but S3) signs it encoded once more
    assert (
        canonical_uri("/model/us.amazon.nova-micro-v1%3A0/converse-stream")
        == "/model/us.amazon.nova-micro-v1%253A0/converse-stream"
    )
    assert canonical_uri("/model/a%3A0/x", double_encode=False) == "/model/a%3A0/x"


@pytest.mark.parametrize(
    ("url", "token", "region", "sha_header", "signed", "signature"),
    [
        # computed with botocore 1.44.8 `SigV4Auth(credentials, "bedrock", region).add_auth`
        # over the same request (it double-encodes the path: `%3A` is signed as `%253A`)
        (
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/us.amazon.nova-micro-v1%3A0"
            "/converse-stream",
            "TOKEN",
            "us-east-1",
            False,
            "content-type;host;x-amz-date;x-amz-security-token",
            "0ccc17f1ee7338895de6359a54c45901c675061a51ba2faea90ed1407e068def",
        ),
        # the same, with an inference-profile ARN (`:` and `/` encoded), a non-default port in
        # the host and the payload-hash header signed
        (
            "http://127.0.0.1:8443/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3A"
            "application-inference-profile%2Fabc/converse-stream",
            None,
            "eu-west-3",
            True,
            "content-type;host;x-amz-content-sha256;x-amz-date",
            "40bdab2a6057c048eb6437209e32e80c60ee1249dacc6c8cf94a00ca925cf358",
        ),
    ],
    ids=["nova-model-id-with-session-token", "inference-profile-arn-with-payload-hash"],
)
def test_bedrock_request_signature_matches_botocore(
    url: str, token: str | None, region: str, sha_header: bool, signed: str, signature: str
) -> None:
    out = sign(
        "POST",
        url,
        {"Content-Type": "application/json"},
        b'{"messages":[]}',
        access_key=ACCESS,
        secret_key=SECRET,
        session_token=token,
        region=region,
        service="bedrock",
        now=WHEN,
        content_sha256_header=sha_header,
    )
    scope = f"AKIDEXAMPLE/20150830/{region}/bedrock/aws4_request"
    assert out["Authorization"] == (
        f"AWS4-HMAC-SHA256 Credential={scope}, SignedHeaders={signed}, Signature={signature}"
    )
    if sha_header:
        assert out["X-Amz-Content-Sha256"] == (
            "5e4ce7b36ba37b78a5d5f9fd08e6b7b54ba6879d651aa46ec9e1d6fa24ebe30a"
        )


def test_payload_hash_header_is_signed_by_default() -> None:
    out = sign(
        "POST",
        "https://h/",
        {},
        b"",
        access_key=ACCESS,
        secret_key=SECRET,
        session_token=None,
        region="r",
        service="bedrock",
        now=WHEN,
    )
    assert "SignedHeaders=host;x-amz-content-sha256;x-amz-date," in out["Authorization"]
    assert out["X-Amz-Content-Sha256"] == (
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )


def test_signing_time_is_taken_in_utc_whatever_the_zone() -> None:
    def at(now: datetime) -> dict[str, str]:
        return sign(
            "GET",
            "https://h/",
            {},
            b"",
            access_key=ACCESS,
            secret_key=SECRET,
            session_token=None,
            region="r",
            service="s",
            now=now,
        )

    paris = WHEN.astimezone(timezone(timedelta(hours=2)))
    assert at(paris) == at(WHEN) == at(WHEN.replace(tzinfo=None))


def test_authorization_and_user_agent_are_never_signed() -> None:
    creq, signed = canonical_request(
        "GET", "https://h/", {"Authorization": "x", "User-Agent": "y", "X-Amz-Date": "d"}, "e"
    )
    assert signed == "host;x-amz-date"
    assert "authorization" not in creq


def test_canonical_query_sorts_and_re_encodes_pairs() -> None:
    assert canonical_query("b=2&a=%7e&a=1&c") == "a=1&a=~&b=2&c="
    assert canonical_query("x=a b+c") == "x=a%20b%2Bc"
