"""A client for alkstore's HTTP API (`alk serve`), standard library only.

    from alkstore_client import Client, work

    client = Client("http://127.0.0.1:7878", token="...")
    client.enqueue("emails", payload={"to": "a@example.com"})
    work(client, "emails", lambda job: print(job["payload"]))

`Client` has one method per operation of the API (generated from its
OpenAPI document, named after each operationId), plus `listen` and
`result`; `Worker`/`work` run a job loop, `GroupMember` a consumer-group
member.
"""

from .client import ApiError, Client, Listener, Notification
from .group import GroupMember
from .worker import Fail, Worker, work

__all__ = ["ApiError", "Client", "Fail", "GroupMember", "Listener", "Notification", "Worker", "work"]
__version__ = "0.1.0"
