"""Send N synthetic ADT messages to the example's inbound (port 2575, or the one given) and
print what the EMR receiver (port 2576) got:

    python send.py 10 [PORT]
"""

import asyncio
import sys

from raftlane.messagefoundry.testing import Receiver, Sender, adt, field_of


async def main(n: int, port: int) -> None:
    emr = Receiver(2576)
    await emr.start()
    sender = Sender("127.0.0.1", port)
    for i in range(n):
        print(f"sent MSG{i:06d}: {await sender.send(adt(i))}")
    await sender.close()
    for _ in range(100):
        if len(emr.received) >= n:
            break
        await asyncio.sleep(0.1)
    for m in emr.received:
        print(f"EMR got {field_of(m, 'MSH', 10)} from {field_of(m, 'MSH', 3)}")
    await emr.stop()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 2575))
