"""The example registry: ADT over MLLP in, one handler, MLLP out to the EMR (FIFO per destination
is messagefoundry's default ordering)."""

from messagefoundry import MLLP, Send, env, handler, inbound, outbound, router

inbound("IB_LAB", MLLP(port=env("lab_in_port", cast=int)), router="lab_router")
outbound("OB_EMR", MLLP(host="127.0.0.1", port=env("emr_port", cast=int)))


@router("lab_router")
def route(msg):
    return ["lab_handler"] if msg["MSH-9.1"] == "ADT" else []


@handler("lab_handler")
def handle(msg):
    msg["MSH-3"] = "RAFTLANE"
    return Send("OB_EMR", msg)
