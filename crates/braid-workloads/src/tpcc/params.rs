//! The parameters of the five TPC-C transactions (Clause 2.4.1, 2.5.1, 2.6.1, 2.7.1, 2.8.1)
//! and their encodings: every random input of a transaction travels in its parameters (see the
//! `tpcc` module doc), so command logging can re-execute it.

use braid_engine::{BadParameter, BadRequest, ParamReader, Params, TxError};

use super::*;

/// A TPC-C parameter `name` of `value` out of range; `accepted` says what is.
fn bad(name: &'static str, value: impl ToString, accepted: &'static str) -> TxError {
    TxError::BadRequest {
        table: u32::MAX,
        request: BadRequest::Param(BadParameter::new("tpcc", name, value, accepted)),
    }
}

fn check_district(d: u64) -> Result<u64, TxError> {
    if (1..=DISTRICTS).contains(&d) {
        Ok(d)
    } else {
        Err(bad("district", d, "1..=10"))
    }
}

/// One line of a New-Order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NewOrderLine {
    /// Item id (`items + 1`, an unused id, makes the transaction roll back).
    pub i_id: u64,
    /// Supplying warehouse.
    pub supply_w: u64,
    /// Quantity ordered (1..=10).
    pub qty: u64,
}

/// Parameters of New-Order (Clause 2.4.1). The 1% rollback is a last line whose item id is not
/// in the catalogue.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NewOrderParams {
    /// Home warehouse.
    pub w: u64,
    /// District (1..=10).
    pub d: u64,
    /// Customer.
    pub c: u64,
    /// Entry date (seconds since the Unix epoch).
    pub entry_d: u64,
    /// Order lines used (1..=[`MAX_OL`]).
    pub ol_cnt: usize,
    /// The lines; only the first `ol_cnt` count.
    pub lines: [NewOrderLine; MAX_OL],
}

impl NewOrderParams {
    /// The `ol_cnt` lines of the order.
    pub fn lines(&self) -> &[NewOrderLine] {
        &self.lines[..self.ol_cnt]
    }

    /// Encode into `p` (cleared first); ids and counts travel as u32.
    pub fn encode(&self, p: &mut Params) {
        p.clear();
        p.put::<u32>(self.w as u32)
            .put::<u32>(self.d as u32)
            .put::<u32>(self.c as u32)
            .put::<u64>(self.entry_d)
            .put::<u32>(self.ol_cnt as u32);
        for l in self.lines() {
            p.put::<u32>(l.i_id as u32)
                .put::<u32>(l.supply_w as u32)
                .put::<u32>(l.qty as u32);
        }
    }

    /// Decode parameters written by [`encode`](Self::encode); a malformed encoding or a
    /// district outside 1..=10 is a [`TxError::BadRequest`].
    pub fn decode(params: &[u8]) -> Result<NewOrderParams, TxError> {
        let mut r = ParamReader::new(params);
        let mut p = NewOrderParams {
            w: u64::from(r.get::<u32>()?),
            d: check_district(u64::from(r.get::<u32>()?))?,
            c: u64::from(r.get::<u32>()?),
            entry_d: r.get::<u64>()?,
            ol_cnt: r.get::<u32>()? as usize,
            lines: [NewOrderLine::default(); MAX_OL],
        };
        if p.ol_cnt == 0 || p.ol_cnt > MAX_OL {
            return Err(bad("New-Order lines", p.ol_cnt, "1..=15"));
        }
        for l in &mut p.lines[..p.ol_cnt] {
            *l = NewOrderLine {
                i_id: u64::from(r.get::<u32>()?),
                supply_w: u64::from(r.get::<u32>()?),
                qty: u64::from(r.get::<u32>()?),
            };
        }
        Ok(p)
    }
}

/// How Payment and Order-Status select the customer (Clause 2.5.1.2, 2.6.1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CustomerSel {
    /// By customer id.
    ById(u64),
    /// The 0..=999 number of the last name (Clause 4.3.2.3).
    ByLastName(u64),
}

impl CustomerSel {
    fn encode(self, p: &mut Params) {
        match self {
            CustomerSel::ById(c) => p.put::<u32>(0).put::<u32>(c as u32),
            CustomerSel::ByLastName(n) => p.put::<u32>(1).put::<u32>(n as u32),
        };
    }

    fn decode(r: &mut ParamReader<'_>) -> Result<CustomerSel, TxError> {
        let tag = r.get::<u32>()?;
        let v = u64::from(r.get::<u32>()?);
        match tag {
            0 => Ok(CustomerSel::ById(v)),
            1 => Ok(CustomerSel::ByLastName(v)),
            _ => Err(bad(
                "customer selector",
                tag,
                "0 (by id) or 1 (by last name)",
            )),
        }
    }
}

/// Parameters of Payment (Clause 2.5.1). `amount` is in cents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PaymentParams {
    /// Warehouse paid at.
    pub w: u64,
    /// District paid at (1..=10).
    pub d: u64,
    /// The customer's warehouse.
    pub c_w: u64,
    /// The customer's district (1..=10).
    pub c_d: u64,
    /// Which customer pays.
    pub customer: CustomerSel,
    /// Amount in cents.
    pub amount: i64,
    /// Payment date (seconds since the Unix epoch).
    pub date: u64,
}

impl PaymentParams {
    /// Encode into `p` (cleared first); ids and counts travel as u32.
    pub fn encode(&self, p: &mut Params) {
        p.clear();
        p.put::<u32>(self.w as u32)
            .put::<u32>(self.d as u32)
            .put::<u32>(self.c_w as u32)
            .put::<u32>(self.c_d as u32);
        self.customer.encode(p);
        p.put::<u64>(self.amount as u64).put::<u64>(self.date);
    }

    /// Decode parameters written by [`encode`](Self::encode); a malformed encoding or a
    /// district outside 1..=10 is a [`TxError::BadRequest`].
    pub fn decode(params: &[u8]) -> Result<PaymentParams, TxError> {
        let mut r = ParamReader::new(params);
        Ok(PaymentParams {
            w: u64::from(r.get::<u32>()?),
            d: check_district(u64::from(r.get::<u32>()?))?,
            c_w: u64::from(r.get::<u32>()?),
            c_d: check_district(u64::from(r.get::<u32>()?))?,
            customer: CustomerSel::decode(&mut r)?,
            amount: r.get::<u64>()? as i64,
            date: r.get::<u64>()?,
        })
    }
}

/// Parameters of Order-Status (Clause 2.6.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderStatusParams {
    /// The customer's warehouse.
    pub w: u64,
    /// The customer's district (1..=10).
    pub d: u64,
    /// Which customer.
    pub customer: CustomerSel,
}

impl OrderStatusParams {
    /// Encode into `p` (cleared first); ids and counts travel as u32.
    pub fn encode(&self, p: &mut Params) {
        p.clear();
        p.put::<u32>(self.w as u32).put::<u32>(self.d as u32);
        self.customer.encode(p);
    }

    /// Decode parameters written by [`encode`](Self::encode); a malformed encoding or a
    /// district outside 1..=10 is a [`TxError::BadRequest`].
    pub fn decode(params: &[u8]) -> Result<OrderStatusParams, TxError> {
        let mut r = ParamReader::new(params);
        Ok(OrderStatusParams {
            w: u64::from(r.get::<u32>()?),
            d: check_district(u64::from(r.get::<u32>()?))?,
            customer: CustomerSel::decode(&mut r)?,
        })
    }
}

/// Parameters of Delivery (Clause 2.7.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeliveryParams {
    /// Warehouse; the oldest undelivered order of each of its ten districts is delivered.
    pub w: u64,
    /// Carrier id (1..=10) stored in the delivered orders.
    pub carrier: u64,
    /// Delivery date (seconds since the Unix epoch).
    pub date: u64,
}

impl DeliveryParams {
    /// Encode into `p` (cleared first); ids and counts travel as u32.
    pub fn encode(&self, p: &mut Params) {
        p.clear();
        p.put::<u32>(self.w as u32)
            .put::<u32>(self.carrier as u32)
            .put::<u64>(self.date);
    }

    /// Decode parameters written by [`encode`](Self::encode); a malformed encoding is a
    /// [`TxError::BadRequest`].
    pub fn decode(params: &[u8]) -> Result<DeliveryParams, TxError> {
        let mut r = ParamReader::new(params);
        Ok(DeliveryParams {
            w: u64::from(r.get::<u32>()?),
            carrier: u64::from(r.get::<u32>()?),
            date: r.get::<u64>()?,
        })
    }
}

/// Parameters of Stock-Level (Clause 2.8.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StockLevelParams {
    /// Warehouse.
    pub w: u64,
    /// District (1..=10) whose recent orders are examined.
    pub d: u64,
    /// Count items whose stock quantity is below this (10..=20).
    pub threshold: i64,
}

impl StockLevelParams {
    /// Encode into `p` (cleared first); ids and counts travel as u32.
    pub fn encode(&self, p: &mut Params) {
        p.clear();
        p.put::<u32>(self.w as u32)
            .put::<u32>(self.d as u32)
            .put::<u32>(self.threshold as u32);
    }

    /// Decode parameters written by [`encode`](Self::encode); a malformed encoding or a
    /// district outside 1..=10 is a [`TxError::BadRequest`].
    pub fn decode(params: &[u8]) -> Result<StockLevelParams, TxError> {
        let mut r = ParamReader::new(params);
        Ok(StockLevelParams {
            w: u64::from(r.get::<u32>()?),
            d: check_district(u64::from(r.get::<u32>()?))?,
            threshold: i64::from(r.get::<u32>()?),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn params_round_trip() {
        let mut p = Params::new();
        let mut no = NewOrderParams {
            w: 2,
            d: 7,
            c: 99,
            entry_d: 123,
            ol_cnt: 3,
            ..Default::default()
        };
        no.lines[0] = NewOrderLine {
            i_id: 5,
            supply_w: 2,
            qty: 3,
        };
        no.lines[1] = NewOrderLine {
            i_id: 6,
            supply_w: 1,
            qty: 10,
        };
        no.lines[2] = NewOrderLine {
            i_id: 100_001,
            supply_w: 2,
            qty: 1,
        };
        no.encode(&mut p);
        assert_eq!(NewOrderParams::decode(&p.bytes).unwrap(), no);
        let pay = PaymentParams {
            w: 1,
            d: 2,
            c_w: 3,
            c_d: 4,
            customer: CustomerSel::ByLastName(371),
            amount: 499_999,
            date: 9,
        };
        pay.encode(&mut p);
        assert_eq!(PaymentParams::decode(&p.bytes).unwrap(), pay);
        let os = OrderStatusParams {
            w: 1,
            d: 10,
            customer: CustomerSel::ById(3000),
        };
        os.encode(&mut p);
        assert_eq!(OrderStatusParams::decode(&p.bytes).unwrap(), os);
        let de = DeliveryParams {
            w: 4,
            carrier: 10,
            date: 77,
        };
        de.encode(&mut p);
        assert_eq!(DeliveryParams::decode(&p.bytes).unwrap(), de);
        let sl = StockLevelParams {
            w: 4,
            d: 1,
            threshold: 15,
        };
        sl.encode(&mut p);
        assert_eq!(StockLevelParams::decode(&p.bytes).unwrap(), sl);
    }

    #[test]
    fn bad_params_are_refused() {
        let mut p = Params::new();
        let no = NewOrderParams {
            w: 1,
            d: 11,
            c: 1,
            entry_d: 0,
            ol_cnt: 1,
            ..Default::default()
        };
        no.encode(&mut p);
        assert!(matches!(
            NewOrderParams::decode(&p.bytes),
            Err(TxError::BadRequest { .. })
        ));
        let no = NewOrderParams {
            w: 1,
            d: 1,
            c: 1,
            entry_d: 0,
            ol_cnt: 0,
            ..Default::default()
        };
        no.encode(&mut p);
        assert!(NewOrderParams::decode(&p.bytes).is_err());
        assert!(PaymentParams::decode(&p.bytes[..6]).is_err());
    }
}
