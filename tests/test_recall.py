"""Recall over conversations digested turn by turn: the answer turn rides with its question."""


def _conversation(mem, scope="project:a"):
    ids = {}
    for name, text in (("before", "let me look at the deploy script first, it has a retry loop"),
                       ("question", "the nightly invoices export keeps timing out"),
                       ("chatter", "ok thanks"),
                       ("answer", "Found it: a full table scan. I added an index on created_at and the job takes "
                                  "forty seconds now."),
                       ("later", "unrelated: the staging certificate expires next week, renew it")):
        ids[name] = mem.digest(text, scope=scope, session="s1", source_tool="claude-code")["node_ids"][0]
    return ids


def test_answer_turn_joins_below_its_question_and_chatter_is_context(mem):
    ids = _conversation(mem)
    for n in range(30):     # other memories, so the question's words are not everywhere
        mem.digest(f"note {n}: the weekly report for team {n} is ready", scope="project:a", session=f"o{n}")
    r = mem.recall("why did the invoices export time out", scopes=["project:a"], limit=8, record=False)
    order = [i["id"] for i in r["items"]]
    assert order[0] == ids["question"]
    assert ids["answer"] in order and order.index(ids["answer"]) == 1, r["items"]
    answer = next(i for i in r["items"] if i["id"] == ids["answer"])
    assert f"via:session:{ids['question']}" in answer["flags"]
    assert ids["chatter"] not in order                           # chatter is listed, not served as an answer
    assert ids["chatter"] in {c["id"] for c in r["items"][0]["context"]}
    assert ids["later"] not in order                             # only the nearest substantive turn each way


def test_neighbour_expansion_obeys_visibility(mem):
    ids = _conversation(mem)
    mem.archive(ids["answer"])
    r = mem.recall("invoices export timing out", scopes=["project:a"], limit=8, record=False)
    served = {i["id"] for i in r["items"]} | {c["id"] for i in r["items"] for c in i["context"]}
    assert ids["question"] in served and ids["answer"] not in served
    # the same session id in another scope is another conversation
    other = mem.digest("Answer in another scope: the export was fixed by a bigger timeout and more workers",
                       scope="project:b", session="s1")["node_ids"][0]
    r = mem.recall("invoices export timing out", scopes=["project:a"], limit=8, record=False)
    served = {i["id"] for i in r["items"]} | {c["id"] for i in r["items"] for c in i["context"]}
    assert other not in served


def test_a_long_note_does_not_flood_the_answer_with_its_units(mem):
    words = ["orchard apples ripen slowly", "harbour cranes lift containers", "violin strings need rosin",
             "delta stage deploys canaries", "granite counters resist heat", "lantern wicks burn evenly",
             "meadow grasses sway gently", "pepper plants want sunlight"]
    units = [f"- step {n}: {w} every single morning without fail" for n, w in enumerate(words)]
    ids = mem.digest("\n".join(units), scope="project:a")["node_ids"]
    assert len(ids) == 8
    for n in range(20):
        mem.digest(f"unrelated note {n} about the garden shed", scope="project:a")
    r = mem.recall("delta stage", scopes=["project:a"], limit=8, record=False)
    order = [i["id"] for i in r["items"]]
    assert order[0] == ids[3]
    siblings = [i for i in order if i in ids and i != ids[3]]
    assert set(siblings) <= {ids[2], ids[4]} and len(siblings) == 2      # one on each side, not all seven
    assert {c["id"] for c in r["items"][0]["context"]} >= {ids[1], ids[5]}


def test_a_filtered_out_turn_does_not_take_the_answer_slot(mem):
    ids = _conversation(mem)
    mem.tag_add(ids["question"], "billing")
    mem.tag_add(ids["answer"], "billing")
    filler = mem.digest("a long aside about lunch plans for the whole team this friday", scope="project:a",
                        session="s1")["node_ids"][0]
    assert filler > ids["answer"]
    r = mem.recall("invoices export timing out", scopes=["project:a"], tags_filter=["billing"], limit=8, record=False)
    served = {i["id"] for i in r["items"]} | {c["id"] for i in r["items"] for c in i["context"]}
    assert ids["answer"] in {i["id"] for i in r["items"]}
    assert served <= {ids["question"], ids["answer"]}                 # the untagged turns never appear


def test_a_contradicted_memory_is_served_with_the_one_it_contradicts(mem):
    old = mem.digest("The payments service listens on port 3000.", scope="project:a")["node_ids"][0]
    fixed = mem.correct(old, "The payments service now listens on port 8080 after the move.")["node_ids"][0]
    again = mem.digest("The payments service listens on port 3000.", scope="project:a")
    assert again["review_items"]                                   # the re-digest of a corrected claim is flagged
    redigest = again["node_ids"][0]
    for n in range(15):
        mem.digest(f"unrelated service note {n} about queues", scope="project:a")
    r = mem.recall("port 3000", scopes=["project:a"], limit=3, record=False)
    order = [i["id"] for i in r["items"]]
    assert redigest in order and fixed in order and len(order) <= 3
    r = mem.recall("port 3000", scopes=["project:a"], limit=1, record=False)   # room for one: the pair stays whole
    assert [i["id"] for i in r["items"]] == [redigest, fixed]
    partner = r["items"][1]
    assert f"via:contradicts:{redigest}" in partner["flags"] and partner["valid_from"] and partner["recorded_at"]
    # the partner obeys the predicate: archived, it is not served
    mem.archive(fixed)
    r = mem.recall("port 3000", scopes=["project:a"], limit=1, record=False)
    assert [i["id"] for i in r["items"]] == [redigest]


def test_the_answer_names_what_grounds_it_and_an_abstention_names_nothing(mem):
    ids = _conversation(mem)
    for n in range(30):
        mem.digest(f"note {n}: the weekly report for team {n} is ready", scope="project:a", session=f"o{n}")
    r = mem.recall("why did the invoices export time out", scopes=["project:a"], limit=8, record=False)
    assert ids["question"] in r["grounded_by"] and ids["answer"] not in r["grounded_by"]    # the answer is context
    assert ids["answer"] in {i["id"] for i in r["items"]} and f"#{ids['question']}" in r["message"]
    none = mem.recall("what colour is the office cat", scopes=["project:a"], record=False)
    assert none["abstained"] and none["items"] == [] and none["grounded_by"] == []


def test_pairs_stay_whole_and_a_hidden_partner_gives_way_to_a_visible_one(mem):
    from tidemind.store import immediate, review

    ids = [mem.digest(f"the lighthouse lamp schedule, version {v}", scope="project:a")["node_ids"][0]
           for v in ("alpha", "bravo", "charlie", "delta", "echo")]
    for n in range(15):
        mem.digest(f"unrelated harbour note {n}", scope="project:a")
    a, b, c, d, e = ids
    with immediate(mem.conn):
        for x, y in ((a, b), (c, d), (e, a)):
            review.file(mem.conn, "contradiction", node_id=x, other_node_id=y, at=mem.now(), scope="project:a")
    mem.archive(a)                                   # e's first partner is hidden: it must not block the pairing
    r = mem.recall("lighthouse lamp schedule", scopes=["project:a"], limit=3, record=False)
    order = [i["id"] for i in r["items"]]
    assert a not in order
    for x, y in ((c, d),):
        assert (x in order) == (y in order)              # never half of a pair
    assert all(mem.show(i)["status"] == "live" for i in order)
